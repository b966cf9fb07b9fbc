"""Support functions of the convex primitives, written as Minkowski sums of simple parts.

Every convex primitive of :class:`sodyn.Geoms` is, in world axes, the Minkowski sum of its
centre ``c``, ``K`` segments ``[-v_k, v_k]`` (``v_k = ℓ_k a_k``, ``a_k`` a unit axis) and one
"round" part ``{Eᵀ u : |u| ≤ 1}`` (the image of the unit ball under a 3×3 matrix ``Eᵀ``):

=========  ====================  =====================================================
type       segments ``v_k``      round part ``E``
=========  ====================  =====================================================
sphere     none                  ``r I``                        (ball)
capsule    ``L z``               ``r I``                        (segment ⊕ ball)
ellipsoid  none                  ``diag(a, b, c) Rᵀ``           (ellipsoid)
cylinder   ``L z``               ``r [x, y, 0]ᵀ``               (segment ⊕ disk)
box        ``s_i R e_i``         ``0``                          (three segments)
=========  ====================  =====================================================

(``R = [x y z]`` the geom's rotation, ``r`` the radius, ``L`` the half-length, ``s`` the
half-sizes.)  The support function ``h(n) = max_{x ∈ K} n·x`` of such a sum is the sum of the
parts' support functions,

    h(n) = c·n + Σ_k |v_k·n| + |E n|,

and a support point is ``x(t, u) = c + Σ_k t_k v_k + Eᵀ u`` with ``t_k = sign(v_k·n)`` and
``u = E n / |E n|``.  Where ``v_k·n = 0`` (a box face or edge, a cylinder or capsule side) or
``E n = 0`` (a cylinder cap) the support set is a segment, a face or a disk and ``h`` has a kink;
any ``t_k ∈ [-1, 1]`` and ``|u| ≤ 1`` then give a support point.  Writing points through these
*witness parameters* ``(t, u)`` is what lets the narrow phase differentiate contact points and
distances with the parameters held fixed (:mod:`sodyn.collision.convex`).

Sphere and capsule keep their core (point, segment) and radius apart: the radius only adds the
constant ``r`` to ``h`` on the unit sphere, so curved contacts stay as well conditioned as the
core's.  Everything is NaN-free for any direction, the zero vector included, and in value and
gradient for degenerate sizes (zero half-length, zero radius).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from sodyn.collision.types import GeomFrame

#: The convex primitive types handled here, in MuJoCo's order.
CONVEX_TYPES = ("sphere", "capsule", "ellipsoid", "cylinder", "box")

#: Number of segments ``K`` of each type (static).
SEGMENTS = {"sphere": 0, "capsule": 1, "ellipsoid": 0, "cylinder": 1, "box": 3}

#: Types whose round part is a flat disk (``E`` of rank 2): ``h`` has a kink at ``n = ±z``.
DISK_TYPES = ("cylinder",)


class Parts(NamedTuple):
    """A geom as the Minkowski sum ``c ⊕ Σ_k [-ℓ_k a_k, ℓ_k a_k] ⊕ Eᵀ B`` (module docstring):
    ``center (3,)``, unit segment ``axes (K, 3)``, ``half (K,)`` half-lengths ``ℓ_k`` and
    ``round (3, 3)`` the matrix ``E``."""

    center: Array
    axes: Array
    half: Array
    round: Array


def parts(type_: str, g: GeomFrame) -> Parts:
    """The Minkowski parts of one geom of type ``type_`` (static) in world axes."""
    r, p, s = g.rotation, g.position, g.size
    eye = jnp.eye(3, dtype=r.dtype)
    rt = jnp.swapaxes(r, -1, -2)          # rows: the geom's axes x, y, z
    none = jnp.zeros((0, 3), r.dtype), jnp.zeros((0,), r.dtype)
    if type_ == "sphere":
        return Parts(p, *none, s[0] * eye)
    if type_ == "capsule":
        return Parts(p, rt[2:], s[1:2], s[0] * eye)
    if type_ == "ellipsoid":
        return Parts(p, *none, s[:, None] * rt)
    if type_ == "cylinder":
        return Parts(p, rt[2:], s[1:2], s[0] * rt * jnp.array([1.0, 1.0, 0.0], r.dtype)[:, None])
    if type_ == "box":
        return Parts(p, rt, s, jnp.zeros_like(r))
    raise ValueError(f"no support function for geom type {type_!r}; convex types are {CONVEX_TYPES}")


def safe_unit(x: Array, fallback: Array | None = None, floor: Array | float | None = None) -> Array:
    """``x / |x|`` along the last axis; where ``|x| ≤ floor`` (default: where ``|x|²`` underflows),
    ``fallback`` (default: the zero vector).  Value and gradient are finite everywhere.  A vector
    made by cancellation (``a − (a·b) b`` for ``b ≈ a``) is rounding noise that XLA may round
    differently in each fusion that recomputes it; a ``floor`` at the noise level (``√ε`` times the
    operands' scale) sends it to the fallback instead of to an arbitrary, or even non-unit, vector."""
    sq = jnp.sum(x * x, axis=-1, keepdims=True)
    ok = sq > (jnp.finfo(x.dtype).tiny ** 0.5 if floor is None else jnp.asarray(floor, x.dtype)[..., None] ** 2)
    unit = x * jax.lax.rsqrt(jnp.where(ok, sq, 1.0))
    return jnp.where(ok, unit, jnp.zeros_like(x) if fallback is None else fallback)


def round_direction(e: Array, n: Array) -> Array:
    """The round part's witness parameter ``u = E n / |E n|`` (``0`` where ``|E n|`` is at the
    rounding level of ``|E| |n|``: a cylinder's cap, whose centre it then picks)."""
    scale = jnp.max(jnp.abs(e), axis=(-2, -1)) * jnp.max(jnp.abs(n), axis=-1)
    return safe_unit(jnp.einsum("...ij,...j->...i", e, n), floor=jnp.sqrt(jnp.finfo(n.dtype).eps) * scale)


def support_parts(pt: Parts, n: Array) -> Array:
    """A support point ``argmax_{x ∈ K} n·x`` of ``K`` given by its parts; ``n`` need not be
    unit.  On a kink the ties are broken towards the middle (``sign 0 = 0``, ``u = 0``)."""
    t = jnp.sign(pt.axes @ n) * pt.half
    return pt.center + t @ pt.axes + pt.round.T @ round_direction(pt.round, n)


def support(type_: str, g: GeomFrame, n: Array) -> Array:
    """World support point of geom ``g`` (type ``type_``, static) in world direction ``n``:
    a point of the geom maximising ``n·x``.  NaN-free for any ``n`` (a zero ``n`` gives the
    centre); ties on flat features are broken towards the feature's middle."""
    return support_parts(parts(type_, g), n)


__all__ = ["CONVEX_TYPES", "DISK_TYPES", "SEGMENTS", "Parts", "parts", "round_direction", "safe_unit",
           "support", "support_parts"]
