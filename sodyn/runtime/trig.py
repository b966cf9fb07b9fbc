"""``sincos``: sine and cosine of joint angles, both from one range reduction.

Every hinge joint needs ``sin θ`` and ``cos θ`` of its angle in every call (Rodrigues' formula,
:func:`sodyn.spatial.axis_angle_to_rotation`).  XLA:CPU evaluates ``jnp.sin`` and ``jnp.cos``
of float64 arrays one element at a time through a library call, many times the cost of a
multiply-add; :func:`sincos` computes both with element-wise arithmetic that XLA vectorises.

Method (the classic Cody–Waite scheme; the float64 constants as published in fdlibm, the
float32 polynomials from the Cephes library): ``k = round(2x/π)``, ``r = x − k π/2`` with ``π/2``
split into parts whose leading products with ``k`` are exact, so ``|r| ≤ π/4`` without
cancellation; then minimax polynomials for ``sin r`` (odd, through ``r¹³`` in float64, ``r⁷`` in
float32) and ``cos r`` (even, through ``r¹⁴`` / ``r⁸``); the quadrant ``k mod 4`` swaps and negates
them.  Largest absolute error against NumPy's float64 ``sin``/``cos`` of the same arguments: one
unit of roundoff at 1 (2.2e-16 in float64 for ``|x|`` up to 1e5 rad, 9.2e-8 in float32 for
``|x|`` up to 1e5; ``tests/test_trig.py``), against half a unit for ``jnp.sin``.  The reduction is
exact up to ``|x|`` ≈ 1.6e6 (float64) and 1.0e5 (float32) whether or not the compiler fuses
``x − k P`` into one multiply-add: Cephes' float32 split of ``π/2`` into three parts is exact only
to ``|x|`` ≈ 1.3e4, and beyond it its error depends on whether XLA:CPU's code generation
contracts ``x − k P`` to multiply-adds (it does by default, not with
``--xla_backend_optimization_level=0``), so the float32 split here has three parts of at most
8 significant bits and a rounded fourth.  The derivative is defined
exactly (``d sin = cos dx``, ``d cos = −sin dx``), not through the polynomials.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

# π/2 = P1 + P2 + tail.  k · P1 and k · P2 are exact for the quadrant counts |k| below 2²⁰ in
# float64 and 2¹⁶ in float32 (|x| up to about 1.6e6 and 1.0e5), and so is x − k P1 − k P2.  The
# tail, one part in float64 and two in float32 (whose parts hold at most 8 significant bits, all
# but the last), is multiplied and summed with roundings far below that of the result.
_PIO2 = {
    np.dtype(np.float64): ((1.57079632673412561417e00, 6.07710050630396597660e-11), (2.02226624871116645580e-21,)),
    np.dtype(np.float32): ((1.5703125, 4.825592041015625e-4), (1.2665987014770508e-6, 9.92093629470503e-10)),
}
# sin r ≈ r + r³ (S1 + S2 r² + …), cos r ≈ 1 − r²/2 + r⁴ (C1 + C2 r² + …) on |r| ≤ π/4.
_SIN = {
    np.dtype(np.float64): (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
                           2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10),
    np.dtype(np.float32): (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4),
}
_COS = {
    np.dtype(np.float64): (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
                           -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11),
    np.dtype(np.float32): (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5),
}


def _horner(z: Array, coefficients: tuple[float, ...]) -> Array:
    acc = jnp.asarray(coefficients[-1], z.dtype)
    for c in coefficients[-2::-1]:
        acc = acc * z + c
    return acc


@jax.custom_jvp
def sincos(x: Array) -> tuple[Array, Array]:
    """``(sin x, cos x)`` element-wise (see the module docstring); float64 and float32 by
    range reduction and polynomials, other dtypes by ``jnp.sin`` and ``jnp.cos``."""
    x = jnp.asarray(x)
    dtype = np.dtype(x.dtype)
    if dtype not in _PIO2:
        return jnp.sin(x), jnp.cos(x)
    (p1, p2), tail = _PIO2[dtype]
    k = jnp.round(x * (2.0 / np.pi))
    tail_k = k * tail[0]
    for t in tail[1:]:
        tail_k = tail_k + k * t
    r = ((x - k * p1) - k * p2) - tail_k
    z = r * r
    s = r + r * z * _horner(z, _SIN[dtype])
    c = 1.0 - 0.5 * z + z * z * _horner(z, _COS[dtype])
    quadrant = k - 4.0 * jnp.floor(k * 0.25)  # k mod 4, exact in floating point
    odd = (quadrant == 1.0) | (quadrant == 3.0)
    sin = jnp.where(odd, c, s)
    cos = jnp.where(odd, s, c)
    return jnp.where(quadrant >= 2.0, -sin, sin), jnp.where((quadrant == 1.0) | (quadrant == 2.0), -cos, cos)


@sincos.defjvp
def _sincos_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    s, c = sincos(x)
    return (s, c), (c * dx, -s * dx)
