"""``sodyn.jit``: ``jax.jit`` with the XLA:CPU compiler options that suit sodyn's programs.

sodyn's batched programs are many small element-wise ops over ``(batch, levels, slots, 6)``
arrays, plus, in reverse mode, the reductions that transposing broadcasts produces.  Two
XLA:CPU passes handle these shapes poorly:

* its YNNPACK fusions (``xla_cpu_experimental_ynn_fusion_type``) turn reductions, which is
  what every small-matrix product of :mod:`sodyn.spatial` is, into library calls that run
  slower than XLA's own loops;
* its fusion emitters (``xla_cpu_use_fusion_emitters``) generate slower loops than the
  classic emitters for these fusions.

Measured with both jitted functions in one process, one core, float64, B = 512 (ratio of
the time with these options to plain ``jax.jit``): ``grad`` of forward dynamics 0.60–0.64×
on Panda, Solo12 and Talos, forward dynamics 0.84–0.94×, ``𝓜⁻¹`` 0.75–0.82×, inverse
dynamics and ``𝓜`` 0.8–1.0×; in float32 at B = 1024, ``grad`` of forward dynamics
0.44–0.60×.  Since the products became reductions the gap is wider: plain ``jax.jit`` ran
forward dynamics 2.6× slower than this ``jit`` on Panda and 2.3× on Talos, and its gradient
2.7× (one process, one core, float64, B = 256).  The options are compile options of one
executable, so unlike ``XLA_FLAGS`` they leave the rest of the process alone.  Both name
XLA:CPU passes only.  Code that must use ``jax.jit`` itself (sodyn inside a larger jitted
program) gets the same effect from ``jax.jit(f, compiler_options=COMPILER_OPTIONS)``, or,
for the whole process, from ``XLA_FLAGS="--xla_cpu_experimental_ynn_fusion_type="`` set
before JAX starts.

**Single calls** (one sample, a control loop's call) are a different program: a few hundred
operations on a few hundred bytes each, so each costs less than handing it to another
thread.  XLA:CPU's default schedule leaves independent operations free to run at once, and
its runtime spreads them over its thread pool; ``jit(fun, latency=True)`` adds
:data:`LATENCY_OPTIONS`, the memory-optimised schedule, under which they run one after
another on the calling thread (seen in a ``jax.profiler`` trace of Panda's forward
dynamics: 350 of 350 fusions on the calling thread, against 184 of 350 without).  Measured
in one process, float64, B = 1, two CPU devices, default dispatch (ratio of the time with
``latency=True`` to without): forward dynamics 0.74× on Panda and 0.92× on Solo12,
``𝓜⁻¹`` 0.67× and 0.64×, inverse dynamics 1.0× and 0.5×.  It is not the default because
batched programs do not gain and forward dynamics at B = 4096 ran 1.1–1.16× slower.  With
``jax.config.update("jax_cpu_enable_async_dispatch", False)`` set at start-up, single-device
calls also run on the calling thread instead of a dispatch thread (batches split across
devices by :func:`sodyn.vmap` are not affected); together the two brought Panda's forward
dynamics from 97 µs to 36 µs per call on the 2-core machine of ``bench/results.md``.

``latency=True`` also tells sodyn's own code, while the function is traced, that it compiles a
single call (:func:`traced_for_single_calls`): forward dynamics then steps its sweeps one level
at a time instead of two (:data:`sodyn.algorithms.world_articulated.FORWARD_UNROLL`), which
single calls run faster (Panda 0.89×: 18.0 against 20.2 µs per call).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

import jax

_SINGLE_CALL = contextvars.ContextVar("sodyn_single_call", default=False)

#: The XLA compile options :func:`jit` adds (see the module docstring for what they change).
COMPILER_OPTIONS: dict[str, Any] = {
    "xla_cpu_experimental_ynn_fusion_type": "",
    "xla_cpu_use_fusion_emitters": False,
}

#: The options ``jit(..., latency=True)`` adds on top, for single-sample calls.
LATENCY_OPTIONS: dict[str, Any] = {
    "xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED",
}

#: Options that compile a program without XLA:CPU's intra-op partitions, for a batch that
#: :func:`sodyn.vmap` splits across every core: ``sodyn.jit(batched, compiler_options=UNPARTITIONED)``.
#:
#: XLA:CPU's ``cpu-parallel-task-assigner`` pass cuts each large operation (by its own cost model:
#: about 512 KiB of memory traffic, or less for arithmetic-heavy ones) into pieces for its intra-op
#: thread pool.  On one device that is its only way to use a second core; when the batch is split
#: across devices, every pool thread already runs one device's program, and a piece waits for a
#: busy thread.  Measured with and without these options (split across 2 CPU devices, B = 4096,
#: float64, both compiled in one process and timed alternately): the mass matrix 0.66–0.76× on
#: Solo12 and 0.71–0.94× on Panda (cores in use 1.6 → 1.8–2.0; float32 at B = 1024: 0.68–0.71×);
#: but forward dynamics 0.92–0.99× in float64 and 1.00–1.18× in float32, ``𝓜⁻¹`` 0.93–1.04×, inverse
#: dynamics 0.91–1.13×, Talos 0.99–1.15×, and the mass matrix of 16–64-link chains 1.00–1.16×.  On
#: one device, without the split, forward dynamics and ``𝓜⁻¹`` took 1.14–1.16× as long.  Hence an
#: option to measure for one's own model and function, not a default.
UNPARTITIONED: dict[str, Any] = {
    "xla_disable_hlo_passes": "cpu-parallel-task-assigner",
}


def jit(fun: Callable, *, latency: bool = False, **jit_kwargs: Any) -> Callable:
    """``jax.jit(fun, **jit_kwargs)`` compiled with :data:`COMPILER_OPTIONS`.

    ``latency=True`` also adds :data:`LATENCY_OPTIONS`, for functions called on one sample at
    a time (a control loop), not on a batch: see the module docstring.  A
    ``compiler_options`` dictionary in ``jit_kwargs`` is merged over both (its entries win).
    Use it like ``jax.jit``, e.g.
    ``sodyn.jit(sodyn.vmap(lambda q, v, t: sodyn.forward_dynamics(model, q, v, t)))``.
    """
    if not callable(fun):
        raise TypeError(f"sodyn.jit expects a callable, got {type(fun).__name__}")
    if not isinstance(latency, bool):
        raise TypeError(f"sodyn.jit: latency must be True or False, got {latency!r}")
    options = {**COMPILER_OPTIONS, **(LATENCY_OPTIONS if latency else {})}
    options.update(jit_kwargs.pop("compiler_options", None) or {})
    return jax.jit(_for_single_calls(fun) if latency else fun, compiler_options=options, **jit_kwargs)


def traced_for_single_calls() -> bool:
    """Whether the function being traced is compiled by ``jit(..., latency=True)``."""
    return _SINGLE_CALL.get()


def _for_single_calls(fun: Callable) -> Callable:
    """``fun``, traced with :func:`traced_for_single_calls` true."""

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        token = _SINGLE_CALL.set(True)
        try:
            return fun(*args, **kwargs)
        finally:
            _SINGLE_CALL.reset(token)

    return traced
