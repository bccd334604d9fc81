# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""csrc/support/lock.c (mc_lock, chain replay's lock): mutual exclusion under contention, both on
its spinning path and on its sleeping one, and a lock taken while others sleep on it wakes them all
in turn."""
from __future__ import annotations

import subprocess

import pytest

from conftest import ROOT, compile_program

STRESS = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "support/lock.h"

static mc_lock g_lock = MC_LOCK_INIT;
static long g_count;          /* plain: only ever touched under g_lock */
static int g_inside;          /* plain: threads inside the critical section, must stay <= 1 */
static int g_overlaps;
static long g_rounds;
static int g_hold_us;         /* every 1000th section sleeps this long holding the lock */
static int g_seen_two;        /* the word read 2 (someone slept on it) while holding */

static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < g_rounds; ++i) {
    mc_lock_take(&g_lock);
    if (++g_inside != 1) ++g_overlaps;
    long c = g_count;
    if (g_hold_us && i % 1000 == 0) {
      struct timespec t = {0, g_hold_us * 1000L};
      nanosleep(&t, NULL);
      if (__atomic_load_n(&g_lock.word, __ATOMIC_RELAXED) == 2) g_seen_two = 1;
    }
    g_count = c + 1;
    --g_inside;
    mc_lock_give(&g_lock);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = atoi(argv[1]);
  g_rounds = atol(argv[2]);
  g_hold_us = atoi(argv[3]);
  pthread_t t[64];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  printf("%ld %d %d %d\n", g_count, g_overlaps, g_seen_two, g_lock.word);
  return 0;
}
"""


@pytest.fixture(scope="module")
def stress(tmp_path_factory):
    return compile_program(tmp_path_factory.mktemp("lock"), "stress", STRESS,
                           ["-O2", "-pthread", f"-I{ROOT / 'csrc'}",
                            str(ROOT / "csrc" / "support" / "lock.c")])


def run(exe, threads, rounds, hold_us):
    p = subprocess.run([str(exe), str(threads), str(rounds), str(hold_us)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    count, overlaps, seen_two, word = map(int, p.stdout.split())
    return count, overlaps, seen_two, word


@pytest.mark.parametrize("threads", [2, 8])
def test_every_section_alone_under_contention(stress, threads):
    """Short sections taken by many threads at once (mostly the spinning path): no two inside
    together, no increment lost, the lock free at the end."""
    count, overlaps, _, word = run(stress, threads, 200000, 0)
    assert (count, overlaps, word) == (threads * 200000, 0, 0)


def test_sleepers_are_woken_and_excluded(stress):
    """A holder that sleeps 2 ms in every 1000th section outlasts the spin, so the others sleep on
    the word (the holder reads 2 there) and are woken in turn: every increment made, none
    together, the lock free at the end."""
    count, overlaps, seen_two, word = run(stress, 4, 20000, 2000)
    assert (count, overlaps, word) == (4 * 20000, 0, 0)
    assert seen_two == 1
