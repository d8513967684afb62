"""The `searchrl` executable's process setting: glibc keeps freed memory for reuse (`keep_freed_memory`)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from searchrl.cli import ALLOCATOR_ENV, keep_freed_memory

# Allocates, fills and frees 64 MiB with glibc's malloc (above its largest mmap threshold, 32 MiB) three times and
# prints the page faults of the third: with glibc's default each is a fresh mapping whose pages all fault again.
PROBE = """
import ctypes, resource, sys
from searchrl.cli import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "tuned" else False
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes, libc.memset.argtypes = [ctypes.c_void_p], [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    before = faults()
    block = libc.malloc(64 << 20)
    libc.memset(block, 1, 64 << 20)
    libc.free(block)
print(applied, faults() - before)
"""


def _probe(side: str) -> tuple[bool, int]:
    env = {k: v for k, v in os.environ.items() if k != ALLOCATOR_ENV}
    out = subprocess.run([sys.executable, "-c", PROBE, side], env=env, capture_output=True, text=True, check=True)
    applied, faults = out.stdout.split()
    return applied == "True", int(faults)


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
                    reason="keep_freed_memory sets glibc's malloc; elsewhere it changes nothing")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    pages = (64 << 20) // 4096
    applied, default_faults = _probe("default")
    assert not applied and default_faults > pages // 2  # glibc's default: every page of the new tensor faults
    applied, tuned_faults = _probe("tuned")
    assert applied and tuned_faults < pages // 10  # the freed memory is reused


def test_the_environment_can_leave_the_allocator_alone(monkeypatch):
    monkeypatch.setenv(ALLOCATOR_ENV, "default")
    assert keep_freed_memory() is False
