"""A closed-form search for the capsule–cylinder pair of the general convex narrow phase
(:mod:`sodyn.collision.convex`): the strata of the support gap where closed forms exist replace
its sampling and Newton runs, in the same candidate layout, so the witness and derivatives are
those of the general routine."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from sodyn.collision import convex
from sodyn.collision.support import safe_unit


def circle_runs(lay: "convex._Layout", p: "convex._Gap", k: int, noise: Array) -> Array:
    """Newton runs on the circle ``a_k·n = 0`` from its starts
    (:func:`~sodyn.collision.convex.circle_starts`), as in ``convex._search``;
    ``(CIRCLE_STARTS, 3)``."""
    dt = p.d.dtype
    axis = p.axes[k]
    perp = safe_unit(jnp.cross(axis, jax.nn.one_hot(jnp.argmin(jnp.abs(axis)), 3, dtype=dt)))
    starts = convex.circle_starts(lay, p, k, perp, noise)
    others = p.axes - (p.axes @ axis)[:, None] * axis
    kinks = safe_unit(others, floor=noise) * (jnp.arange(p.axes.shape[0]) != k)[:, None].astype(dt)
    step = jax.vmap(lambda n: convex._newton_step(p, lay, axis, jnp.zeros((), bool), kinks, n))
    return jax.lax.fori_loop(0, convex.NEWTON_ITERATIONS, lambda _, n: step(n), starts)


def search_segment_disk(lay: "convex._Layout", p: "convex._Gap") -> tuple[Array, Array]:
    r"""The general search for a capsule (segment ``±h e`` ⊕ ball) and a cylinder (segment
    ``±H z`` ⊕ disk of radius ``R``), with closed forms where the strata allow, in the candidate
    layout of ``convex._layout`` (so ``convex._witness`` reads the winner as usual).

    ``s(n) = n·d − h|e·n| − H|z·n| − R|Pn| − r``.  Its strata: the crossings ``±unit(e × z)`` and
    the cap normals ``±z`` (points, exact); the circle ``z·n = 0`` (the cylinder's side), where
    ``s = n·d − h|e·n| − R − r`` is the 2-D support gap of the origin and the segment
    ``d − t e`` projected along ``z``, maximal at ``n = unit(w)``, ``w`` that projection's
    point nearest the origin (closed form); the circle ``e·n = 0`` (the capsule's side): Newton
    runs as in :func:`~sodyn.collision.convex._search`; and the open region, where ``s = s_±(n) = n·(d ∓ h e) − h_C(n)``
    is the gap of an end point of the segment and the cylinder.  There a local maximum of ``s``
    is one of ``s_±``: outside the cylinder the end point's unique one, at ``n = −unit(y − x_C)``
    for ``y`` the end point and ``x_C`` its nearest point of the cylinder (closed form); inside,
    ``s_±`` has none in the open region (``−h_C`` restricted to the sphere has a negative
    curvature along the rim), so the maximum lies on the strata above.  Every candidate's value
    is ``s`` itself, a lower bound of the distance, and the best wins.
    """
    dt = p.d.dtype
    noise = jnp.sqrt(jnp.finfo(dt).eps)
    e, z = p.axes[0], p.axes[1]
    h, big_h, big_r = p.half[0], p.half[1], p.cap_r[0]
    perp_z = safe_unit(jnp.cross(z, jax.nn.one_hot(jnp.argmin(jnp.abs(z)), 3, dtype=dt)))
    cross = safe_unit(jnp.cross(e, z), perp_z, noise)
    points = jnp.stack([cross, -cross, z, -z])
    # the cylinder's side: the projected segment's point nearest the origin
    d_h, e_h = p.d - (p.d @ z) * z, e - (e @ z) * z
    t = jnp.clip((d_h @ e_h) / jnp.maximum(e_h @ e_h, jnp.finfo(dt).tiny), -h, h)
    side = safe_unit(d_h - t * e_h, cross, noise * (jnp.linalg.norm(p.d) + h))
    # the open region: each end point against the cylinder
    ends = []
    for sign in (1.0, -1.0):
        y = sign * h * e - p.d                                           # end point, from the cylinder's centre
        yz = y @ z
        radial = y - yz * z
        rho = jnp.linalg.norm(radial)
        nearest = jnp.clip(yz, -big_h, big_h) * z + safe_unit(radial, perp_z) * jnp.minimum(rho, big_r)
        ends.append(safe_unit(nearest - y, side, noise * (jnp.linalg.norm(p.d) + h + big_h + big_r)))
    circle_e = circle_runs(lay, p, 0, noise)
    cand = jnp.concatenate([points, circle_e, jnp.stack([side] * convex.CIRCLE_STARTS),
                            jnp.stack((ends * convex.SPHERE_STARTS)[:convex.SPHERE_STARTS])])
    scale = jnp.linalg.norm(p.d) + jnp.sum(p.half) + jnp.sum(p.cap_r) + p.ball
    bias = 16.0 * jnp.finfo(dt).eps * scale * (2.0 - jnp.asarray(lay.rank, dt))
    win = jnp.argmax(convex._gap(p, cand) + bias)
    return cand[win], win


__all__ = ["circle_runs", "search_segment_disk"]
