r"""The general convex narrow phase: the pairs MuJoCo solves by GJK/EPA, as a maximisation of the
support gap over unit normals, with fixed iteration counts.

**Signed distance as a maximum.**  Both geoms are Minkowski sums of a centre, segments and a round
part (:mod:`sodyn.collision.support`), so for a unit ``n`` the *gap*
``s(n) = min_{x₁∈K₁, x₂∈K₂} n·(x₂ − x₁) = −h₁(n) − h₂(−n)`` is

    s(n) = d·n − Σ_k ℓ_k |a_k·n| − Σ_m √(nᵀ Q_m n) − Σ_j r_j |P_j n| − r_ball,      d = c₂ − c₁,

with the segments ``ℓ_k a_k`` of both geoms pooled, ``Q = EᵀE`` per ellipsoid, ``r |P n|`` per
cylinder disk (``P = I − z zᵀ``, kept as a projection: ``nᵀQn`` would cancel near ``n = ±z``),
and sphere and capsule radii a constant (their core is a point or a segment).  For convex geoms
the signed distance (negative: penetration depth) is ``max_{|n|=1} s(n)``, attained at the
contact normal ``n*`` (from geom 1 to geom 2).  Every unit ``n`` gives a lower bound, so candidates
from several searches compare by value alone.  Apart, ``s`` has one local maximum with ``s > 0``
(it is concave on the ball); overlapping, it can have several (one per box face, say), so the
search starts from global samples.

**Strata.**  ``s`` is smooth except on the great circles ``a_k·n = 0`` (a box face or edge, a
capsule or cylinder side: a flat support set) and at the cap normals ``n = ±z`` of a cylinder,
where the disk term is a cone.  The maximiser lies in one stratum, and every stratum is searched;
the best value wins (ties go to the lower dimension), so the search lands *on* flat features:

* 0-D: each crossing ``±unit(a_k × a_l)`` and each cap normal, evaluated exactly.
* 1-D: on each circle ``a_k·n = 0``, ``CIRCLE_STARTS`` Newton runs in the circle's angle from the
  best local maxima among ``CIRCLE_SAMPLES`` equally spaced points and the circle's points nearest
  to the other geom's cap normals (where the cone makes a narrow ridge).
* 2-D: ``SPHERE_STARTS`` Newton runs on the sphere from the best local maxima among
  ``SPHERE_SAMPLES`` Fibonacci directions (six nearest neighbours) and the cap normals.

**Newton steps** use exact derivatives of the homogeneous ``s`` on the sphere: gradient ``Tᵀz``
with ``z = ∇s(n) = x₂ − x₁`` (the support points' difference) and Hessian ``−Tᵀ Σ K T − s I``
(``K = (Q − w wᵀ)/√(nᵀQn)`` with ``w = Q n/√(nᵀQn)`` per ellipsoid, ``(r/|Pn|)(P − û ûᵀ)`` with
``û = Pn/|Pn|`` per disk; ``T``: a tangent basis, or ``a_k × n`` on a circle).  Each step tries,
and keeps the best if ``s`` does not decrease: the Newton step (the gradient where the Hessian is
not negative definite; at most ``MAX_STEP`` rad) scaled by ``BACKTRACK``; per cylinder the step of
the model with the cap's cone kept exact (:func:`_cone_step`: plain Newton steps overshoot through
a cone's apex); the reflections of ``n`` across the nearest kink circle and through the nearest
cap normal (a kink approached from the wrong side is crossed).  Runs are monotone and start within
the sample spacing (about 20° on the sphere, 15° on a circle), where Newton converges
quadratically: ``NEWTON_ITERATIONS = 6`` steps reach the float64 resolution of ``s`` (normal
~1e-8 rad).  Against a reference search with 400 samples, 8 starts per stratum and 25 steps,
6000 random poses per pair agree to 1e-15 m except for 3, all deep overlaps (depth 0.25–0.38 m
for half-axes 0.1–0.45 m): an ellipsoid pair with two close local maxima whose better basin holds
no sample maximum (6e-4 m), and two where the depth nearly equals a curvature radius, so that the
maximum is flat and 6 steps leave the normal 1e-3 rad off (distance < 3e-7 m off).

**Cost** per pair (one static program; runs vmapped, ``K`` segments, ``J`` cylinders):
``SPHERE_SAMPLES + K·CIRCLE_SAMPLES`` gap evaluations, ``2·C(K,2) + 2J`` points, and
``K·CIRCLE_STARTS + SPHERE_STARTS`` runs of ``NEWTON_ITERATIONS`` steps, each step one 2×2
Newton solve, ``J`` cone steps of ``CONE_ITERATIONS`` 2×2 solves and ``3 + J + [K>0] + [J>0]``
gap evaluations: 4 runs for sphere/ellipsoid pairs up to 12 runs and 14 points for
cylinder–box; about 20k (sphere–ellipsoid) to 135k (cylinder–box) flops.  Capsule–cylinder, common in
legged robots' models, replaces the sphere samples and runs and the cylinder-side runs by closed
forms (:func:`sodyn.collision.segment_disk.search_segment_disk`): ``CIRCLE_STARTS`` runs in all.

**Witnesses and derivatives.**  The search runs under ``stop_gradient``.  The winner's stratum
says which witness parameters are free (``t_k`` on a circle or crossing, the cap point for a cap
normal); they are the minimum-norm solution of the tangential balance ``(I − n nᵀ)(x₂ − x₁) = 0``,
clipped to their ranges, and the others are the support function's.  With ``n*`` and these
parameters frozen, ``x_i = c_i + Σ t_k v_k + E_iᵀ u_i`` is recomputed from the differentiable
geometry (rotation, position and size), ``distance = n*·(x₂ − x₁)`` and ``position = (x₁ + x₂)/2``:
the distance's derivative is the saddle-point (Danskin) derivative of ``max_n min_x``, exact on
flat features too, where differentiating ``|a·n*|`` would not be; the position's is that of the
frozen material points; the normal carries none.  After the search everything is polynomial in
the geometry, so values and gradients are finite at touching, coincident centres, parallel axes
and zero lengths.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from sodyn.collision.support import DISK_TYPES, SEGMENTS, Parts, parts, round_direction, safe_unit
from sodyn.collision.types import Contacts, GeomFrame

#: Fibonacci directions sampling the sphere, and Newton runs on it.
SPHERE_SAMPLES, SPHERE_STARTS = 96, 4
#: Equally spaced points sampling each circle ``a_k·n = 0``, and Newton runs on it.
CIRCLE_SAMPLES, CIRCLE_STARTS = 24, 2
#: Safeguarded Newton steps per run; Newton steps of a cone-exact step's secular equation.
NEWTON_ITERATIONS, CONE_ITERATIONS = 6, 3
#: Longest Newton step (rad), and the fractions of it tried.
MAX_STEP, BACKTRACK = 0.5, (1.0, 0.25, 0.0625)

_ROUND = {"sphere": "ball", "capsule": "ball", "ellipsoid": "quad", "cylinder": "disk", "box": None}


def _fibonacci(n: int) -> np.ndarray:
    """``n`` nearly uniform unit vectors (the Fibonacci lattice: equal-area bands, golden-angle turns)."""
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    phi = i * math.pi * (3.0 - math.sqrt(5.0))
    return np.stack([np.sqrt(1.0 - z * z) * np.cos(phi), np.sqrt(1.0 - z * z) * np.sin(phi), z], axis=-1)


_SPHERE = _fibonacci(SPHERE_SAMPLES)
_NEIGHBOURS = np.argsort(-_SPHERE @ _SPHERE.T, axis=1)[:, 1:7]
_ANGLES = 2.0 * math.pi * np.arange(CIRCLE_SAMPLES) / CIRCLE_SAMPLES
_CIRCLE = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=-1)


class _Gap(NamedTuple):
    """The gap's data: ``d``, the pooled unit ``axes (K, 3)`` and ``half (K,)`` lengths, the
    ellipsoids' ``quad (M, 3, 3)``, the summed ball radii ``ball``, and the cylinders' unit axes
    ``cap (J, 3)`` and radii ``cap_r (J,)``."""

    d: Array
    axes: Array
    half: Array
    quad: Array
    ball: Array
    cap: Array
    cap_r: Array


class _Layout(NamedTuple):
    """Static structure of a pair type: ``owner`` (geom 0/1 of each pooled segment), ``caps``
    ``(geom, segment)`` per cylinder, crossing ``pairs``, and per candidate (crossings and
    cap normals, then the circle runs, then the sphere runs) the ``active`` witness parameters
    (``K + 2J`` booleans) and the stratum's dimension ``rank``."""

    owner: tuple[int, ...]
    caps: tuple[tuple[int, int], ...]
    pairs: tuple[tuple[int, int], ...]
    active: np.ndarray
    rank: np.ndarray
    segment_disk: bool = False


def _layout(type1: str, type2: str) -> _Layout:
    """The :class:`_Layout` of a pair type."""
    k1, k2 = SEGMENTS[type1], SEGMENTS[type2]
    kk = k1 + k2
    owner = (0,) * k1 + (1,) * k2
    caps = tuple((i, 0 if i == 0 else k1) for i, t in enumerate((type1, type2)) if t in DISK_TYPES)
    pairs = tuple(itertools.combinations(range(kk), 2))
    cols = np.arange(kk + 2 * len(caps))
    rows = [np.isin(cols, pair) for pair in pairs for _ in range(2)]
    rows += [np.isin(cols, [kk + 2 * j, kk + 2 * j + 1]) for j in range(len(caps)) for _ in range(2)]
    rank = [0] * len(rows) + [1] * (kk * CIRCLE_STARTS) + [2] * SPHERE_STARTS
    rows += [cols == k for k in range(kk) for _ in range(CIRCLE_STARTS)] + [cols < 0] * SPHERE_STARTS
    return _Layout(owner, caps, pairs, np.array(rows, bool).reshape(len(rows), len(cols)), np.array(rank),
                   (type1, type2) == ("capsule", "cylinder"))


def _gap(p: _Gap, n: Array) -> Array:
    """``s(n)`` for unit directions ``n (..., 3)``."""
    quad = jnp.sqrt(jnp.maximum(jnp.einsum("...i,mij,...j->...m", n, p.quad, n), 0.0))
    cn = n @ p.cap.T                                                    # a cap's |P n| without cancellation
    disk = jnp.linalg.norm(n[..., None, :] - cn[..., :, None] * p.cap, axis=-1) @ p.cap_r
    return n @ p.d - jnp.abs(n @ p.axes.T) @ p.half - jnp.sum(quad, axis=-1) - disk - p.ball


def _solve2(m: Array, g: Array) -> Array:
    """``m⁻¹ g`` for a 2×2 ``m`` (adjugate over determinant)."""
    return jnp.array([[m[1, 1], -m[0, 1]], [-m[1, 0], m[0, 0]]]) @ g / (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0])


def _cone_step(g: Array, m: Array, e: Array, b: Array, r: Array) -> Array:
    """The maximiser ``δ`` of ``g·δ − ½ δᵀ m δ − r |e + b δ|``: a quadratic model with one cap's
    cone ``−r |P n|`` kept exact (``e = P n``, ``b = P T``; ``m`` is replaced by its absolute value,
    the eigenvalues' signs flipped to positive, so that a deep overlap's negative curvature shortens
    the step instead of sending it far).  Stationarity gives ``(m + λ bᵀb) δ = g − λ bᵀe`` with
    ``λ |e + b δ| = r``; as in trust-region subproblems, ``φ(λ) = 1/|e + b δ(λ)| − λ/r`` is nearly
    linear in ``λ`` (exactly so at the apex, ``e = 0``, for isotropic ``m``), and
    ``CONE_ITERATIONS`` Newton steps on it from ``λ = 0`` (``0 ≤ λ ≤ 1e12``) solve it.  Where the
    apex is the model's maximiser, ``φ > 0`` throughout: ``λ`` grows and ``δ`` heads for the apex."""
    dt, tiny = g.dtype, jnp.finfo(g.dtype).tiny
    r = jnp.maximum(r, jnp.finfo(dt).eps)
    mean, dev = 0.5 * (m[0, 0] + m[1, 1]), 0.5 * (m + m.T) - 0.5 * (m[0, 0] + m[1, 1]) * jnp.eye(2, dtype=dt)
    h = jnp.sqrt(dev[0, 0] ** 2 + dev[0, 1] ** 2)                     # eigenvalues mean ± h
    big, small = jnp.abs(mean + h), jnp.abs(mean - h)
    ratio = jnp.where(h > 1e-6 * (big + small), (big - small) / jnp.maximum(2.0 * h, tiny), jnp.sign(mean))
    m = (0.5 * (big + small) + 1e-6 * (big + small) + tiny) * jnp.eye(2, dtype=dt) + ratio * dev   # |m|
    bb, be = b.T @ b, b.T @ e

    def newton(_: int, lam: Array) -> Array:
        a = m + lam * bb
        v = e + b @ _solve2(a, g - lam * be)
        nv = jnp.maximum(jnp.linalg.norm(v), tiny)
        bv = b.T @ v
        slope = jnp.minimum((bv @ _solve2(a, bv)) / nv ** 3 - 1.0 / r, -1e-9 / r)
        return jnp.clip(lam - (1.0 / nv - lam / r) / slope, 0.0, 1e12)

    lam = jax.lax.fori_loop(0, CONE_ITERATIONS, newton, jnp.zeros((), dt))
    return _solve2(m + lam * bb, g - lam * be)


def _newton_step(p: _Gap, lay: _Layout, a: Array, free: Array, kinks: Array, n: Array) -> Array:
    """One safeguarded Newton step of ``max s`` from the unit ``n`` (module docstring), on the
    sphere (``free``) or on the circle ``a·n = 0``; ``kinks (K, 3)``: unit normals of the kink
    circles seen in the stratum (zero rows: none)."""
    dt, tiny = n.dtype, jnp.finfo(n.dtype).tiny
    noise = jnp.sqrt(jnp.finfo(dt).eps)             # below it a unit-scale difference is rounding
    s = _gap(p, n)
    helper = jax.nn.one_hot(jnp.argmin(jnp.abs(n)), 3, dtype=dt)
    b1 = safe_unit(jnp.where(free, jnp.cross(n, helper), jnp.cross(a, n)), floor=noise)
    t = jnp.stack([b1, jnp.where(free, jnp.cross(n, b1), 0.0)], axis=-1)
    # round parts: gradient w and curvature K of √(nᵀQn) (ellipsoids) and of r |P n| (caps)
    qn = jnp.einsum("mij,j->mi", p.quad, n)
    rho = jnp.sqrt(jnp.maximum(jnp.sum(qn * n, axis=-1), jnp.finfo(dt).eps))
    w = qn / rho[:, None]
    curv = jnp.einsum("ia,mij,jb->mab", t, p.quad - w[:, :, None] * w[:, None, :], t) / rho[:, None, None]
    pn = n - (p.cap @ n)[:, None] * p.cap
    pt = t[None] - p.cap[:, :, None] * (p.cap @ t)[:, None, :]          # (J, 3, 2): P T
    size = jnp.maximum(jnp.linalg.norm(pn, axis=-1), jnp.sqrt(jnp.finfo(dt).eps))
    cw = p.cap_r[:, None] * pn / size[:, None]
    ut = (pn / size[:, None]) @ t
    ccurv = (p.cap_r / size)[:, None, None] * (jnp.einsum("jia,jib->jab", pt, pt) - ut[:, :, None] * ut[:, None, :])
    g = t.T @ (p.d - (jnp.sign(p.axes @ n) * p.half) @ p.axes - jnp.sum(w, axis=0) - jnp.sum(cw, axis=0))
    fr = free.astype(dt)
    sb = s + p.ball                                  # the balls' terms cancel on the sphere
    m = jnp.sum(curv, axis=0) + jnp.sum(ccurv, axis=0) + jnp.diag(jnp.stack([sb, sb * fr + 1.0 - fr]))   # −Hessian
    definite = (m[0, 0] > 0) & (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0] > 0)
    step = jnp.where(definite, _solve2(jnp.where(definite, m, jnp.eye(2, dtype=dt)), g),
                     g / jnp.maximum(jnp.linalg.norm(g), tiny))

    def cut(x: Array) -> Array:
        return x * jnp.minimum(1.0, MAX_STEP / jnp.maximum(jnp.linalg.norm(x), tiny))

    trials = [n + jnp.asarray(BACKTRACK, dt)[:, None] * (t @ cut(step))]
    for j in range(len(lay.caps)):                   # the cap's cone kept exact
        delta = _cone_step(g + t.T @ cw[j], m - ccurv[j], pn[j], pt[j], p.cap_r[j])
        trials.append((n + t @ cut(delta))[None])
    if kinks.shape[0]:                               # across the nearest kink circle
        near = kinks[jnp.argmin(jnp.where(jnp.any(kinks != 0, axis=1), jnp.abs(kinks @ n), jnp.inf))]
        trials.append((n - 2.0 * (near @ n) * near)[None])
    if lay.caps:                                     # through the nearest cap normal (sphere only)
        near = p.cap[jnp.argmax(jnp.abs(p.cap @ n))]
        trials.append(jnp.where(free, 2.0 * (near @ n) * near - n, n)[None])
    x = jnp.concatenate(trials)
    x = safe_unit(jnp.where(free, x, x - (x @ a)[:, None] * a), n, noise)
    sx = _gap(p, x)
    best = jnp.argmax(sx)
    return jnp.where(sx[best] >= s, x[best], n)


def _best(values: Array, peak: Array, count: int) -> Array:
    """Indices of the ``count`` best samples flagged ``peak`` (local maxima), then of the others."""
    spread = jnp.max(values) - jnp.min(values)
    return jax.lax.top_k(jnp.where(peak, values, values - 2.0 * spread - 1.0), count)[1]


def circle_starts(lay: _Layout, p: _Gap, k: int, perp: Array, noise: Array) -> Array:
    """Starts of the Newton runs on the circle ``a_k·n = 0`` (``perp`` a unit vector on it):
    the best local maxima of its ``CIRCLE_SAMPLES`` samples and its points nearest to the other
    geom's cap normals; ``(CIRCLE_STARTS, 3)``."""
    axis = p.axes[k]
    circ = jnp.asarray(_CIRCLE, p.d.dtype)
    ring = circ[:, :1] * perp + circ[:, 1:] * jnp.cross(axis, perp)
    near = [safe_unit(c - (c @ axis) * axis, perp, noise) for (i, _), c in zip(lay.caps, p.cap) if i != lay.owner[k]]
    ring = jnp.concatenate([ring] + [jnp.stack([x, -x]) for x in near])
    v = _gap(p, ring)
    m = CIRCLE_SAMPLES
    peak = jnp.concatenate([(v[:m] >= jnp.roll(v[:m], 1)) & (v[:m] >= jnp.roll(v[:m], -1)),
                            jnp.ones(2 * len(near), bool)])
    return ring[_best(v, peak, CIRCLE_STARTS)]


def _search(lay: _Layout, p: _Gap) -> tuple[Array, Array]:
    """The maximiser ``n*`` of ``s`` over all strata and the winner's index (module docstring)."""
    if lay.segment_disk:
        from sodyn.collision.segment_disk import search_segment_disk

        return search_segment_disk(lay, p)
    dt = p.d.dtype
    kk = p.axes.shape[0]
    noise = jnp.sqrt(jnp.finfo(dt).eps)
    helper = jax.nn.one_hot(jnp.argmin(jnp.abs(p.axes), axis=-1), 3, dtype=dt)
    perp = safe_unit(jnp.cross(p.axes, helper))                                    # (K, 3) ⊥ each axis
    # 0-D: the crossings of two circles (parallel axes: a point of both), the cap normals
    points = [jnp.zeros((0, 3), dt)]
    for k, l in lay.pairs:
        x = safe_unit(jnp.cross(p.axes[k], p.axes[l]), perp[k], noise)
        points.append(jnp.stack([x, -x]))
    points = jnp.concatenate(points + [jnp.stack([c, -c]) for c in p.cap])
    # 1-D: per circle, local maxima of its samples and its points nearest to the other geom's caps
    starts = []
    for k in range(kk):
        starts.append(circle_starts(lay, p, k, perp[k], noise))
    # 2-D: local maxima of the Fibonacci samples (six nearest neighbours), and the cap normals
    sphere = jnp.concatenate([jnp.asarray(_SPHERE, dt), points[2 * len(lay.pairs):]])
    v = _gap(p, sphere)
    peak = jnp.concatenate([v[:SPHERE_SAMPLES] >= jnp.max(v[_NEIGHBOURS], axis=-1),
                            jnp.ones(2 * len(lay.caps), bool)])
    starts = jnp.concatenate(starts + [sphere[_best(v, peak, SPHERE_STARTS)]])
    # per run: the circle's axis (0 on the sphere) and the kink circles seen from it
    proj = p.axes[None, :, :] - (p.axes @ p.axes.T)[:, :, None] * p.axes[:, None, :]
    proj = safe_unit(proj, floor=noise) * (1.0 - jnp.eye(kk, dtype=dt))[:, :, None]
    kinks = jnp.concatenate([jnp.repeat(proj, CIRCLE_STARTS, axis=0), jnp.broadcast_to(p.axes, (SPHERE_STARTS, kk, 3))])
    a = jnp.concatenate([jnp.repeat(p.axes, CIRCLE_STARTS, axis=0), jnp.zeros((SPHERE_STARTS, 3), dt)])
    free = jnp.arange(a.shape[0]) >= kk * CIRCLE_STARTS
    step = jax.vmap(lambda ai, fi, ki, ni: _newton_step(p, lay, ai, fi, ki, ni))
    found = jax.lax.fori_loop(0, NEWTON_ITERATIONS, lambda _, n: step(a, free, kinks, n), starts)
    cand = jnp.concatenate([points, found])
    scale = jnp.linalg.norm(p.d) + jnp.sum(p.half) + jnp.sqrt(jnp.sum(jnp.abs(p.quad))) + jnp.sum(p.cap_r) + p.ball
    bias = 16.0 * jnp.finfo(dt).eps * scale * (2.0 - jnp.asarray(lay.rank, dt))
    win = jnp.argmax(_gap(p, cand) + bias)
    return cand[win], win


def _spd_solve(a: Array, r: Array) -> Array:
    """``a⁻¹ r`` for a small symmetric positive definite ``a`` (static size): Gaussian elimination
    without pivoting, unrolled."""
    m = a.shape[0]
    if m == 0:
        return r
    a, r = list(a), list(r)
    for k in range(m):
        for i in range(k + 1, m):
            f = a[i][k] / a[k][k]
            a[i], r[i] = a[i] - f * a[k], r[i] - f * r[k]
    x = [None] * m
    for k in reversed(range(m)):
        x[k] = (r[k] - sum((a[k][j] * x[j] for j in range(k + 1, m)), jnp.zeros_like(r[k]))) / a[k][k]
    return jnp.stack(x)


def _witness(lay: _Layout, p1: Parts, p2: Parts, n: Array, win: Array) -> tuple[Array, Array, Array]:
    """Frozen witness parameters ``(t (K,), u1 (3,), u2 (3,))`` at the winner's normal ``n``: the
    stratum's free ones (``active``) from the tangential balance, the others the support's."""
    dt = n.dtype
    axes, half = jnp.concatenate([p1.axes, p2.axes]), jnp.concatenate([p1.half, p2.half])
    kk = axes.shape[0]
    sigma = jnp.asarray([-1.0 if o == 0 else 1.0 for o in lay.owner], dt)
    active = jnp.asarray(lay.active, bool)[win]
    t0 = -sigma * jnp.sign(axes @ n)
    u = [round_direction(p1.round, n), -round_direction(p2.round, n)]
    cap = [jnp.zeros((), bool), jnp.zeros((), bool)]
    cols = [sigma[:, None] * half[:, None] * axes]
    for j, (i, _) in enumerate(lay.caps):
        cap[i] = active[kk + 2 * j]
        cols.append((-1.0 if i == 0 else 1.0) * (p1, p2)[i].round[:2])
    z = p2.center - p1.center + (jnp.where(active[:kk], 0.0, t0) * half * sigma) @ axes
    z = z - (~cap[0]).astype(dt) * (p1.round.T @ u[0]) + (~cap[1]).astype(dt) * (p2.round.T @ u[1])
    b = jnp.concatenate(cols) * active.astype(dt)[:, None]                # (K + 2J, 3): the free columns
    gram = b @ b.T
    gram = gram + jnp.finfo(dt).eps * (jnp.trace(gram) + 1.0) * jnp.eye(b.shape[0], dtype=dt)
    y = -_spd_solve(gram, b @ (z - (z @ n) * n))                          # minimum norm
    t = jnp.where(active[:kk], jnp.clip(y[:kk], -1.0, 1.0), t0)
    for j, (i, _) in enumerate(lay.caps):
        w = y[kk + 2 * j: kk + 2 * j + 2]
        u[i] = jnp.where(cap[i], jnp.concatenate([w / jnp.maximum(1.0, jnp.linalg.norm(w)), jnp.zeros((1,), dt)]), u[i])
    return t, u[0], u[1]


def _gap_data(lay: _Layout, types: tuple[str, str], f1: Parts, f2: Parts) -> _Gap:
    """The gap's data (:class:`_Gap`) of two geoms' parts."""
    dt = f1.center.dtype
    quad = [f.round.T @ f.round for f, t in zip((f1, f2), types) if _ROUND[t] == "quad"]
    ball = sum((f.round[0, 0] for f, t in zip((f1, f2), types) if _ROUND[t] == "ball"), jnp.zeros((), dt))
    caps = [((f1, f2)[i].axes[0], jnp.linalg.norm((f1, f2)[i].round[0])) for i, _ in lay.caps]
    return _Gap(f2.center - f1.center, jnp.concatenate([f1.axes, f2.axes]), jnp.concatenate([f1.half, f2.half]),
                jnp.stack(quad) if quad else jnp.zeros((0, 3, 3), dt), ball,
                jnp.stack([c for c, _ in caps]) if caps else jnp.zeros((0, 3), dt),
                jnp.stack([r for _, r in caps]) if caps else jnp.zeros((0,), dt))


def _point(pt: Parts, t: Array, u: Array) -> Array:
    """The point ``c + Σ t_k ℓ_k a_k + Eᵀ u`` of a geom for witness parameters ``(t, u)``."""
    return pt.center + (t * pt.half) @ pt.axes + pt.round.T @ u


def convex_pair(type1: str, type2: str) -> Callable[[GeomFrame, GeomFrame], Contacts]:
    """The narrow-phase function ``f(g1, g2) -> Contacts`` (one slot) of two convex geoms of types
    ``type1``, ``type2`` (static; any of :data:`sodyn.collision.support.CONVEX_TYPES`).  The slot
    holds the signed distance (negative: penetration), the normal from ``g1`` to ``g2`` and the
    midpoint of the witness points, whatever the distance: the caller compares it with the margin."""
    lay = _layout(type1, type2)
    k1 = SEGMENTS[type1]

    def pair(g1: GeomFrame, g2: GeomFrame) -> Contacts:
        q1, q2 = parts(type1, g1), parts(type2, g2)
        f1, f2 = jax.lax.stop_gradient((q1, q2))
        gap = _gap_data(lay, (type1, type2), f1, f2)
        n, win = _search(lay, gap)
        t, u1, u2 = jax.lax.stop_gradient(_witness(lay, f1, f2, n, win))
        x1, x2 = _point(q1, t[:k1], u1), _point(q2, t[k1:], u2)
        return Contacts((n @ (x2 - x1))[None], (0.5 * (x1 + x2))[None], n[None])

    pair.__name__ = f"{type1}_{type2}"
    pair.__doc__ = f"Contact of a {type1} ``g1`` and a {type2} ``g2`` (:func:`convex_pair`)."
    return pair


#: MuJoCo's GJK/EPA pairs (type order: sphere < capsule < ellipsoid < cylinder < box).
CONVEX_PAIRS: dict[tuple[str, str], Callable[[GeomFrame, GeomFrame], Contacts]] = {
    key: convex_pair(*key)
    for key in [("sphere", "ellipsoid"), ("capsule", "ellipsoid"), ("ellipsoid", "ellipsoid"),
                ("ellipsoid", "cylinder"), ("ellipsoid", "box"), ("capsule", "cylinder"),
                ("cylinder", "cylinder"), ("cylinder", "box")]
}
#: Contact slots per pair type.
SLOTS: dict[tuple[str, str], int] = dict.fromkeys(CONVEX_PAIRS, 1)

__all__ = ["CIRCLE_SAMPLES", "CIRCLE_STARTS", "CONE_ITERATIONS", "CONVEX_PAIRS", "NEWTON_ITERATIONS", "SLOTS",
           "SPHERE_SAMPLES", "SPHERE_STARTS", "convex_pair"]
