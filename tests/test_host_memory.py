"""``sodyn.runtime.reuse_freed_memory``: after it, glibc serves a large request from its heap instead
of mapping fresh pages (read back through ``mallinfo2``), and bad thresholds are refused.  It
changes the process's allocator, so it runs in a child process."""

import platform
import subprocess
import sys

import pytest

import sodyn as sd

_SCRIPT = r"""
import ctypes
import numpy as np
import sodyn as sd

libc = ctypes.CDLL(None)
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc.mallinfo2.restype = MallInfo2
n = 82_000_000  # Talos's mass matrix at B = 4096, float64
before = np.ones(n // 8)
mapped = libc.mallinfo2().hblkhd
assert mapped >= n, mapped  # glibc's default: a mapping of its own
del before
assert sd.runtime.reuse_freed_memory() is True
after = np.ones(n // 8)
info = libc.mallinfo2()
assert info.hblkhd < n and info.arena >= n, (info.hblkhd, info.arena)  # from the heap
del after
assert libc.mallinfo2().arena >= n  # freed, but kept: not trimmed back to the system
again = np.ones(n // 8)  # and reused, not grown again
assert libc.mallinfo2().arena == info.arena
print("OK")
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_large_requests_come_from_the_heap_after_the_call():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("OK")


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "1GB"])
def test_bad_threshold_is_refused(bad):
    with pytest.raises(ValueError, match="threshold_bytes must be a positive int"):
        sd.runtime.reuse_freed_memory(bad)
