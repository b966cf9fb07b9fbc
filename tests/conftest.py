"""Shared test configuration.

* float64 everywhere (oracle comparisons need it).
* XLA:CPU compiles the suite's programs with its classic loop emitters and without LLVM's
  optimisation passes (``XLA_FLAGS``, set here before JAX creates its CPU client).  Most of the
  suite's time is XLA compiling programs that then run a few times: the whole suite took 5 min
  9 s to 6 min 28 s instead of 12 min 12 s (two workers, two cores), and ``test_transforms``' 23 functions
  compiled in 7–9 s instead of 13–16 s per variant.  XLA's HLO passes (fusion, simplification)
  are the same; the machine code is less optimised and does not contract ``a · b + c`` into
  multiply-adds, so the suite checks sodyn's accuracy without them (``tests/test_trig.py``).
  The classic emitters are those :func:`sodyn.jit` compiles with.  ``SODYN_TEST_XLA_DEFAULTS=1``
  runs the suite with XLA's defaults instead; flags already in ``XLA_FLAGS`` are kept.
  ``tests/test_bench_smoke.py`` runs the benchmark harness, whose workers set their own flags.
"""

import os

import jax

FAST_COMPILE_FLAGS = ("--xla_cpu_use_fusion_emitters=false", "--xla_backend_optimization_level=0")

if not os.environ.get("SODYN_TEST_XLA_DEFAULTS"):
    _given = os.environ.get("XLA_FLAGS", "")
    _added = [f for f in FAST_COMPILE_FLAGS if f.split("=")[0] not in _given]
    os.environ["XLA_FLAGS"] = " ".join([_given, *_added]).strip()

jax.config.update("jax_enable_x64", True)
