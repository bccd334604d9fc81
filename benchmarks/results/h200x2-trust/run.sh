#!/bin/sh
# Two H200s: objects stay on their device (trust issue item 7), the multi-GPU tests, and one process
# per GPU under torchrun with MGPU_CACHED_DEVICE=local-rank (issue 13).
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > $O/install.log 2>&1 || { tail -20 $O/install.log; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > $O/device.txt 2>&1
timeout 200 python3 -m pytest -v -rs tests/gpu/test_concurrency_gpu.py tests/test_local_rank.py > $O/pytest-2gpu.log 2>&1; echo "pytest rc=$?" >> $O/pytest-2gpu.log
L=$(python3 -c "import mgpu_cached;print(mgpu_cached.libdir())")
cc -std=c11 -O1 -o /tmp/stay tests/data/conc/stay_on_device.c -L$L -lmgpu_cached -Wl,-rpath,$L
cc -std=c11 -O1 -o /tmp/rank tests/data/conc/rank_probe.c tests/data/mlir/empty_loop_llvm22.o -L$L -lmgpu_cached -Wl,-rpath,$L -ldl
{ for d in 0 1; do echo "== stay_on_device MGPU_CACHED_DISABLE=$d"; MGPU_CACHED_DISABLE=$d timeout 60 /tmp/stay tests/data/kernels.fatbin 2>&1; echo "exit $?"; done
  echo "== torchrun --nproc-per-node=2, MGPU_CACHED_DEVICE=local-rank"
  MGPU_CACHED_DEVICE=local-rank timeout 120 torchrun --nproc-per-node=2 --no-python /tmp/rank 200 2>&1 | grep -v "^W\|^\*\|OMP_NUM"; echo "exit $?"
  echo "== torchrun --nproc-per-node=2, MGPU_CACHED_DEVICE unset (every rank on device 0: rank 1 must report a mismatch)"
  timeout 120 torchrun --nproc-per-node=2 --no-python /tmp/rank 200 2>&1 | grep -v "^W\|^\*\|OMP_NUM"; echo "exit $?"
} > $O/two-gpu.txt 2>&1
tail -4 $O/pytest-2gpu.log; grep -E "FAILED|ERROR" $O/pytest-2gpu.log | head; cat $O/two-gpu.txt
