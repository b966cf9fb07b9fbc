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
* ``-m fast`` selects the short subset that the second CI leg (newest JAX) and the GPU machine
  run: identities, oracle comparisons, gradients and compile size.
"""

import os

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
