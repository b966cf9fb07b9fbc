"""``sodyn.jit``: ``jax.jit`` with the XLA:CPU compiler options that suit sodyn's programs.

sodyn's batched programs are many small element-wise ops over ``(batch, levels, slots, 6)``
arrays, plus, in reverse mode, the reductions that transposing broadcasts produces.  Two
XLA:CPU passes handle these shapes poorly:

* its YNNPACK fusions (``xla_cpu_experimental_ynn_fusion_type``) turn those reductions into
  library calls that run slower than XLA's own loops;
* its fusion emitters (``xla_cpu_use_fusion_emitters``) generate slower loops than the
  classic emitters for these fusions.

Measured with both jitted functions in one process, one core, float64, B = 512 (ratio of
the time with these options to plain ``jax.jit``): ``grad`` of forward dynamics 0.60–0.64×
on Panda, Solo12 and Talos, forward dynamics 0.84–0.94×, ``𝓜⁻¹`` 0.75–0.82×, inverse
dynamics and ``𝓜`` 0.8–1.0×; in float32 at B = 1024, ``grad`` of forward dynamics
0.44–0.60×.  Single calls (B = 1) do not change.  The options are compile options of one
executable, so unlike ``XLA_FLAGS`` they leave the rest of the process alone.  Both name
XLA:CPU passes only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

#: The XLA compile options :func:`jit` adds (see the module docstring for what they change).
COMPILER_OPTIONS: dict[str, Any] = {
    "xla_cpu_experimental_ynn_fusion_type": "",
    "xla_cpu_use_fusion_emitters": False,
}


def jit(fun: Callable, **jit_kwargs: Any) -> Callable:
    """``jax.jit(fun, **jit_kwargs)`` compiled with :data:`COMPILER_OPTIONS`.

    A ``compiler_options`` dictionary in ``jit_kwargs`` is merged over
    :data:`COMPILER_OPTIONS` (its entries win).  Use it like ``jax.jit``, e.g.
    ``sodyn.jit(sodyn.vmap(lambda q, v, t: sodyn.forward_dynamics(model, q, v, t)))``.
    """
    if not callable(fun):
        raise TypeError(f"sodyn.jit expects a callable, got {type(fun).__name__}")
    options = {**COMPILER_OPTIONS, **(jit_kwargs.pop("compiler_options", None) or {})}
    return jax.jit(fun, compiler_options=options, **jit_kwargs)
