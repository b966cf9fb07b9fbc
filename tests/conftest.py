"""Shared test configuration.

* float64 everywhere (oracle comparisons need it).
* XLA:CPU compiles the suite's programs without LLVM's optimisation passes (``XLA_FLAGS``, set
  here before JAX creates its CPU client).  Most of the suite's time is XLA compiling programs that then run a
  few times.  XLA's HLO passes are the same; the machine code is less optimised and does not
  contract ``a · b + c`` into multiply-adds, so the suite also checks sodyn's accuracy without
  them (``tests/test_trig.py``).  XLA aborts on a flag it does not know and its flags change
  between releases, so the flags are first tried in a child process (once per test session:
  the result is passed to the workers in ``SODYN_TEST_XLA_FLAGS``).
  ``SODYN_TEST_XLA_DEFAULTS=1`` runs the suite with XLA's defaults; flags already in
  ``XLA_FLAGS`` are kept.  (sodyn itself sets no flag: ``tests/test_batching.py`` checks that
  ``import sodyn`` leaves JAX and XLA as it found them.)
* Compiled programs are kept in JAX's persistent compilation cache under ``.pytest_cache/xla``
  (``SODYN_TEST_COMPILE_CACHE``: another folder; ``0``: none), one folder per ``pytest-xdist``
  worker (JAX writes an entry without a lock unless it also evicts, and eviction rescans the
  folder at every write), so a program that several tests compile (the same function of the
  same model or the same eager operation, in different test files, or again in the ``slow`` run
  that follows) is compiled once per worker.  The cache key holds the program, the compile
  options and the JAX version, so a stale entry is never used.
* ``-m fast`` selects the short subset that the second CI leg (newest JAX) and the GPU machine
  run: identities, oracle comparisons, gradients and compile size.
"""

import os
from pathlib import Path

import jax

from sodyn.runtime.xla import accepted_xla_flags

FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0",)

if not os.environ.get("SODYN_TEST_XLA_DEFAULTS"):
    if "SODYN_TEST_XLA_FLAGS" not in os.environ:
        os.environ["SODYN_TEST_XLA_FLAGS"] = " ".join(accepted_xla_flags(FAST_COMPILE_FLAGS))
    _given = os.environ.get("XLA_FLAGS", "")
    _added = [f for f in os.environ["SODYN_TEST_XLA_FLAGS"].split() if f.split("=")[0] not in _given]
    os.environ["XLA_FLAGS"] = " ".join([_given, *_added]).strip()

jax.config.update("jax_enable_x64", True)

_cache = os.environ.get("SODYN_TEST_COMPILE_CACHE", str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "xla"))
if _cache != "0":   # a folder per worker: JAX writes its entries without a lock unless it evicts
    jax.config.update("jax_compilation_cache_dir", str(Path(_cache) / os.environ.get("PYTEST_XDIST_WORKER", "main")))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
