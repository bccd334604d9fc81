#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N103 (one H100, nvidia-h100-x1): thread-local look-ups through TLS descriptors
# (-mtls-dialect=gnu2: a library in static TLS, linked or preloaded, reads its thread-local words
# without __tls_get_addr; against the fake, half the __tls_get_addr calls of an LLVM 19 chain link
# go). The same C code built twice by the same cc line, with and without the flag:
# threads at 4 (21 reps; the default build as "cached", the gnu2 build preloaded as "before"), and
# chains of 10 and 100 launches (LLVM 22 and 19 with the heap blob), each build preloaded, 2 + 2
# rounds in the order default, gnu2, gnu2, default. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
CP="$CF -Wl,-z,now -Wl,-soname,libmgpu_cached.so"
mkdir -p /tmp/def /tmp/gnu2
cc $CP -Icsrc $(find csrc -mindepth 2 -name "*.c" | sort) -o /tmp/def/libmgpu_cached.so -ldl || exit 1
cc $CP -mtls-dialect=gnu2 -Icsrc $(find csrc -mindepth 2 -name "*.c" | sort) -o /tmp/gnu2/libmgpu_cached.so -ldl || exit 1
readelf -rW /tmp/gnu2/libmgpu_cached.so | grep -c TLSDESC > $O/tlsdesc_relocs.txt
LD_PRELOAD=/tmp/def/libmgpu_cached.so timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 21 \
  --threads 4 --before /tmp/gnu2/libmgpu_cached.so --only "cached,cached llvm19-load,before,before llvm19-load" \
  > $O/threads4_tls.txt 2>&1; echo "rc=$?" >> $O/threads4_tls.txt; cut -c1-200 $O/threads4_tls.txt
i=0
for v in def gnu2 gnu2 def; do
  i=$((i+1))
  LD_PRELOAD=/tmp/$v/libmgpu_cached.so timeout 120 python3 benchmarks/chains.py --out /tmp/ch$i --k 10,100 --llvm 22,19 \
    --rounds 2 --reps 3 --launches 3000 > /tmp/ch$i.log 2>&1 || tail -3 /tmp/ch$i.log
  cp /tmp/ch$i/chains.json $O/chains_${i}_$v.json
  grep -E "^\| (10|100) \|" /tmp/ch$i/chains.md | awk -F'|' -v v=$v '{print v, $2, $3, "chain", $9, "graphK", $6, "chain/graphK", $13}'
done
