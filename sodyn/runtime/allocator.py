"""``reuse_freed_memory``: let glibc's ``malloc`` keep large freed buffers for reuse.

A batched call returns a new output buffer each time, and XLA:CPU allocates its temporaries the
same way.  glibc's ``malloc`` serves every request above its ``mmap`` threshold (at most 32 MiB,
raised dynamically up to that) by mapping fresh pages and unmaps them on ``free``, so each call
of a function with a large output faults its pages in again, one 4 KiB page at a time (the
zero-filled output of :func:`sodyn.batch`'s chunk loop and the chunks' copies into it included).
Serving such requests from the heap and keeping what is freed makes the next call reuse pages
already mapped, which matters for large outputs (a mass matrix over a large batch), not small
ones.

The same setting without any code: glibc reads it from the environment when the process starts,

.. code-block:: sh

    MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=2147483647 python script.py

(``MALLOC_MMAP_THRESHOLD_``: requests below it come from the heap; ``MALLOC_TRIM_THRESHOLD_``:
free memory at the top of the heap is returned to the system only above it).  That is the
preferred form, since it also covers the allocations made before Python runs;
:func:`reuse_freed_memory` is for a process already running, and is reached as
``sodyn.runtime.reuse_freed_memory``.

The cost, either way: memory freed at the top of the heap is no longer returned to the system,
so the process keeps its peak footprint.  It is process-wide and not the default; set it once,
before the batched work.
"""

from __future__ import annotations

import ctypes

#: ``mallopt`` parameters of glibc's ``<malloc.h>``.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: Requests below this many bytes are served from the heap: 1 GiB covers the outputs and
#: temporaries of batched calls on robot-sized models.
DEFAULT_THRESHOLD = 1 << 30


def reuse_freed_memory(threshold_bytes: int = DEFAULT_THRESHOLD) -> bool:
    """Serve ``malloc`` requests below ``threshold_bytes`` from the heap, and keep freed heap
    memory instead of returning it to the system (glibc's ``mallopt`` ``M_MMAP_THRESHOLD`` and
    ``M_TRIM_THRESHOLD``), so that large outputs of repeated batched calls reuse mapped pages.

    Returns ``True`` when glibc took both settings; ``False`` where the C library is not glibc
    (macOS, musl, Windows) or glibc refused the threshold (2.36 takes up to ``2³¹ − 1``; older
    versions documented a 32 MiB ceiling), which leaves the process unchanged.  See the module
    docstring for what it gains and costs.
    """
    if not isinstance(threshold_bytes, int) or isinstance(threshold_bytes, bool) or threshold_bytes <= 0:
        raise ValueError(f"threshold_bytes must be a positive int, got {threshold_bytes!r}")
    libc = _glibc()
    if libc is None:
        return False
    threshold = min(threshold_bytes, 2**31 - 1)  # mallopt takes a C int
    if libc.mallopt(_M_MMAP_THRESHOLD, threshold) != 1:
        return False
    return libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1


def _glibc() -> ctypes.CDLL | None:
    """The process's own C library if it is glibc (it exports ``gnu_get_libc_version``), else
    ``None``."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    except (OSError, TypeError, AttributeError):
        return None
    return libc if libc.gnu_get_libc_version() else None
