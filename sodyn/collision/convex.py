r"""The general convex narrow phase: the pairs MuJoCo solves by GJK/EPA, as a maximisation
of the support gap over unit normals with fixed iteration counts.

**Signed distance as a maximum.**  Write both geoms as Minkowski sums
(:mod:`sodyn.collision.support`): ``h_i(n) = c_i·n + Σ_k |v_k·n| + |E_i n|``.  For a unit
``n`` the *gap* ``s(n) = min_{x₂∈K₂, x₁∈K₁} n·(x₂ − x₁) = −h₁(n) − h₂(−n)`` is

    s(n) = d·n − Σ_k ℓ_k |a_k·n| − |E₁ n| − |E₂ n|,        d = c₂ − c₁,

the segments ``ℓ_k a_k`` of both geoms pooled.  For convex geoms the signed distance (negative:
penetration depth) is ``max_{|n|=1} s(n)``, attained at the contact normal ``n*`` (from geom 1
to geom 2).  Any unit ``n`` gives a lower bound, so candidates from several searches can be
compared by value alone.  When the geoms are apart, ``s`` has one local maximum with ``s > 0``
(``s`` is concave on the ball); when they overlap there can be several (one per face of a box,
say), so the search starts from a global sample.

**Strata.**  ``s`` is smooth except on the great circles ``a_k·n = 0`` (a box face or edge, a
capsule or cylinder side, where the support set is a segment or face) and at ``n = ±z`` of a
cylinder (``E n = 0``: the cap).  The maximiser lies in one stratum: a smooth point (2-D), a
point of one circle (1-D), or a crossing point ``±a_k × a_l`` or cap normal (0-D).  Every
stratum is searched and the best value wins (a tie goes to the lower dimension), so the method
converges *on* flat features rather than next to them:

* 0-D: every crossing ``±unit(a_k × a_l)`` (``k < l``) and every cap normal is evaluated.
* 1-D: on each circle ``a_k·n = 0``, the best of ``CIRCLE_SAMPLES`` equally spaced points
  starts a trust-region Newton iteration in the circle's angle.
* 2-D: the best of ``SPHERE_SAMPLES`` Fibonacci directions (and of all the other samples and
  ``unit(d)``) starts a trust-region Newton iteration on the sphere.

Newton uses the exact Riemannian derivatives of the homogeneous ``s``: gradient ``Tᵀ z`` with
``z = ∇s(n) = x₂ − x₁`` (the support points' difference) and Hessian
``Tᵀ ∇²s T − s(n) I`` with ``∇²s = −Σ_i (E_iᵀE_i − w_i w_iᵀ) / |E_i n|``, ``w_i = E_iᵀ E_i n /
|E_i n|`` (``T`` the tangent basis: two columns, or ``a_k × n`` on a circle).  A step is the
Newton step where ``−H`` is positive definite and the gradient otherwise, cut to the trust
radius; it is kept only if ``s`` does not decrease (so every candidate is monotone and any
kink crossed on the way is harmless), and the radius doubles on success and shrinks to a
quarter of the rejected step otherwise.  From a start within the sampling spacing (about 25°
on the sphere, 22.5° on a circle) Newton converges quadratically: ``NEWTON_ITERATIONS = 12``
steps bring the normal to ~1e-8 rad in float64 (where ``s`` stops resolving further
improvement), well past the 1e-4 rad target, with the remainder spent shrinking the radius
back from an overshoot.

**Witnesses and derivatives.**  The search runs under ``stop_gradient``.  The winner's stratum
says which witness parameters are free (``t_k`` for a circle or crossing, the cap point ``u``
for a cap normal); they are the minimum-norm solution of the tangential balance
``(I − n nᵀ)(x₂ − x₁) = 0``, clipped to their ranges, and the others are the support
function's.  With ``n*`` and the parameters frozen, ``x_i = c_i + Σ t_k v_k + E_iᵀ u_i`` is
recomputed from the differentiable geometry, ``distance = n*·(x₂ − x₁)`` and ``position =
(x₁ + x₂)/2``.  This is the saddle-point (Danskin) derivative of ``max_n min_x``, exact on
flat features too, where differentiating ``|a·n*|`` would not be.  The normal carries no
derivative.  Everything is polynomial in the geometry after the search, so values and
gradients are finite at touching, coincident centres, parallel axes and zero lengths.

**Cost per pair** (cylinder–box, the largest: 4 segments, 1 cap): 64 + 4×16 samples, 14
crossing/cap points and 5 Newton runs × 12 steps (each: ``z``, a 2×2 Hessian, one ``s``).
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

#: Fibonacci directions for the global sample of the 2-D stratum.
SPHERE_SAMPLES = 64
#: Equally spaced points sampling each 1-D stratum (a circle ``a_k·n = 0``).
CIRCLE_SAMPLES = 16
#: Newton runs per circle and on the sphere (from the best local maxima of their samples).
CIRCLE_STARTS = 2
SPHERE_STARTS = 3
#: Safeguarded Newton steps per run.
NEWTON_ITERATIONS = 12
#: Newton steps of the secular equation of a cap's cone-exact step.
CONE_ITERATIONS = 8
#: Longest Newton step (rad) and the fractions of it tried at each step.
MAX_STEP = 0.5
_BACKTRACK = (1.0, 0.25, 1.0 / 16.0, 1.0 / 64.0)


def _fibonacci(n: int) -> np.ndarray:
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    phi = i * math.pi * (3.0 - math.sqrt(5.0))
    rho = np.sqrt(1.0 - z * z)
    return np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=-1)


_SPHERE = _fibonacci(SPHERE_SAMPLES)
_NEIGHBOURS = np.argsort(-_SPHERE @ _SPHERE.T, axis=1)[:, 1:7]
_ANGLES = 2.0 * math.pi * np.arange(CIRCLE_SAMPLES) / CIRCLE_SAMPLES
_CIRCLE = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=-1)


class _Pair(NamedTuple):
    """The pair's gap data: ``d = c₂ − c₁``, pooled unit ``axes (K, 3)`` and ``half (K,)``,
    the round matrices ``e1``, ``e2``."""

    d: Array
    axes: Array
    half: Array
    e1: Array
    e2: Array


def _gap(p: _Pair, n: Array) -> Array:
    """``s(n)`` for unit directions ``n (..., 3)``."""
    seg = jnp.abs(n @ p.axes.T) @ p.half
    r1 = jnp.linalg.norm(n @ p.e1.T, axis=-1)
    r2 = jnp.linalg.norm(n @ p.e2.T, axis=-1)
    return n @ p.d - seg - r1 - r2


def _round_terms(e: Array, n: Array) -> tuple[Array, Array]:
    """A round part's contribution ``w = Eᵀ E n / |E n|`` to ``∇h`` and its Hessian
    ``(EᵀE − w wᵀ) / |E n|`` (the norm floored, so a cap normal gives a large finite value)."""
    en = e @ n
    rho = jnp.maximum(jnp.linalg.norm(en), jnp.sqrt(jnp.finfo(n.dtype).eps))
    w = e.T @ (en / rho)
    return w, (e.T @ e - jnp.outer(w, w)) / rho


def _basis(n: Array) -> tuple[Array, Array]:
    """An orthonormal tangent basis at the unit ``n`` (the helper axis: ``n``'s smallest component)."""
    helper = jax.nn.one_hot(jnp.argmin(jnp.abs(n)), 3, dtype=n.dtype)
    b1 = safe_unit(jnp.cross(n, helper))
    return b1, jnp.cross(n, b1)


def _solve2(m: Array, g: Array) -> Array:
    """``m⁻¹ g`` for a 2×2 ``m`` (adjugate over determinant)."""
    adj = jnp.array([[m[1, 1], -m[0, 1]], [-m[1, 0], m[0, 0]]])
    return adj @ g / (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0])


def _concave(m: Array) -> Array:
    """``m`` (symmetric 2×2, the negated model Hessian) shifted to be positive definite."""
    m00, m01, m11 = m[0, 0], 0.5 * (m[0, 1] + m[1, 0]), m[1, 1]
    low = 0.5 * (m00 + m11) - jnp.sqrt(0.25 * (m00 - m11) ** 2 + m01 * m01)
    return m + jnp.maximum(0.0, 1e-3 * (jnp.abs(m00) + jnp.abs(m11)) - low) * jnp.eye(2, dtype=m.dtype)


def _cone_step(g: Array, m: Array, e: Array, b: Array, r: Array) -> Array:
    """The maximiser ``δ`` of ``g·δ − ½ δᵀ m δ − r |e + b δ|`` (``m`` positive definite): a
    quadratic model with one cylinder cap's cone ``−r|P n|`` kept exact (``e = E n / r``,
    ``b = E T / r``).  Stationarity gives ``(m + λ bᵀb) δ = g − λ bᵀe`` with ``λ |e + b δ| = r``;
    ``λ |e + b δ(λ)|`` increases with ``λ``, so Newton steps in ``log λ`` from ``λ₀ = r / |e + b
    m⁻¹g|`` (below the root) converge from one side; ``CONE_ITERATIONS`` of them.  Where the
    cone's apex is the model's maximiser there is no root, ``λ`` grows and ``δ`` tends to it."""
    dt = g.dtype
    bb, be = b.T @ b, b.T @ e

    def at(log_lam: Array) -> tuple[Array, Array, Array, Array]:
        lam = jnp.exp(log_lam)
        a = m + lam * bb
        d = _solve2(a, g - lam * be)
        return lam, a, d, e + b @ d

    def newton(_: int, log_lam: Array) -> Array:
        lam, a, _, v = at(log_lam)
        vv = jnp.maximum(v @ v, jnp.finfo(dt).tiny)
        bv = b.T @ v
        slope = 1.0 - lam * (bv @ _solve2(a, bv)) / vv
        step = (0.5 * jnp.log(lam * lam * vv) - jnp.log(r)) / jnp.maximum(slope, 0.05)
        return jnp.minimum(log_lam - step, 60.0)

    v0 = e + b @ _solve2(m, g)
    log_lam = jnp.log(r) - 0.5 * jnp.log(jnp.maximum(v0 @ v0, jnp.finfo(dt).tiny))
    return at(jax.lax.fori_loop(0, CONE_ITERATIONS, newton, jnp.minimum(log_lam, 60.0)))[2]


def _newton_step(p: _Pair, disks: tuple[int, ...], a: Array, free: Array, kinks: Array, apexes: Array,
                 n: Array) -> Array:
    """One safeguarded Newton step of ``max s`` from the unit ``n``, on the sphere (``free``) or
    on the circle ``a·n = 0`` (module docstring).  ``disks``: the geom (0, 1) of each cap;
    ``kinks (L, 3)``: unit normals of the kink circles within the stratum (zero rows: none);
    ``apexes (J, 3)``: the caps' normals."""
    dt = n.dtype
    tiny = jnp.finfo(dt).tiny
    s = _gap(p, n)
    b1, b2 = _basis(n)
    b1 = jnp.where(free, b1, safe_unit(jnp.cross(a, n), b1))
    b2 = jnp.where(free, b2, 0.0)
    t = jnp.stack([b1, b2], axis=-1)
    w = [_round_terms(e, n) for e in (p.e1, p.e2)]
    z = p.d - (jnp.sign(p.axes @ n) * p.half) @ p.axes - w[0][0] - w[1][0]
    g = t.T @ z
    fr = free.astype(dt)
    m = t.T @ (w[0][1] + w[1][1]) @ t + jnp.diag(jnp.stack([s, s * fr + 1.0 - fr]))   # −(model Hessian)
    definite = (m[0, 0] > 0) & (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0] > 0)
    step = jnp.where(definite, _solve2(jnp.where(definite, m, jnp.eye(2, dtype=dt)), g),
                     g / jnp.maximum(jnp.linalg.norm(g), tiny))
    step = step * jnp.minimum(1.0, MAX_STEP / jnp.maximum(jnp.linalg.norm(step), tiny))
    trials = [n + jnp.asarray(_BACKTRACK, dt)[:, None] * (t @ step)]
    for i in disks:      # the step with the cap's cone kept exact
        e = (p.e1, p.e2)[i]
        r = jnp.linalg.norm(e[0])
        rr = jnp.maximum(r, tiny)
        step = _cone_step(g + t.T @ w[i][0], _concave(m - t.T @ w[i][1] @ t), e @ n / rr, e @ t / rr, r)
        step = step * jnp.minimum(1.0, MAX_STEP / jnp.maximum(jnp.linalg.norm(step), tiny))
        trials.append((n + t @ step)[None])
    if kinks.shape[0]:   # reflection across the nearest kink circle
        near = kinks[jnp.argmin(jnp.where(jnp.any(kinks != 0, axis=1), jnp.abs(kinks @ n), jnp.inf))]
        trials.append((n - 2.0 * (near @ n) * near)[None])
    if apexes.shape[0]:  # reflection through the nearest cap normal (sphere only)
        near = apexes[jnp.argmax(jnp.abs(apexes @ n))]
        trials.append(jnp.where(free, 2.0 * (near @ n) * near - n, n)[None])
    x = jnp.concatenate(trials)
    x = jnp.where(free, x, x - (x @ a)[:, None] * a)
    x = safe_unit(x, n)
    sx = _gap(p, x)
    best = jnp.argmax(sx)
    return jnp.where(sx[best] >= s, x[best], n)


class _Layout(NamedTuple):
    """The static candidate layout of a pair type.  ``owner``: the geom (0, 1) of each pooled
    segment; ``disks``: ``(geom, segment)`` of each cylinder cap; ``pairs``: the crossing circle
    pairs; ``circle_runs``: per Newton run on a circle ``(segment k, start)`` with start
    ``("ring", j)`` (the ``j``-th best local maximum of the circle's samples) or ``("apex", j,
    ±1)`` (the circle's point nearest to cap normal ``±z_j``); then ``sphere_runs`` free runs
    (``SPHERE_STARTS`` sample maxima, then the cap normals ``±z_j``).  Per candidate (points,
    circle runs, sphere runs): the ``active`` witness parameters (``K + 2J`` booleans) and a
    tie-break ``rank`` (the stratum's dimension)."""

    owner: tuple[int, ...]
    disks: tuple[tuple[int, int], ...]
    pairs: tuple[tuple[int, int], ...]
    circle_runs: tuple[tuple[int, tuple], ...]
    sphere_runs: int
    active: np.ndarray
    rank: np.ndarray


def _layout(type1: str, type2: str) -> _Layout:
    k1, k2 = SEGMENTS[type1], SEGMENTS[type2]
    kk = k1 + k2
    owner = (0,) * k1 + (1,) * k2
    disks = tuple((i, 0 if i == 0 else k1) for i, t in enumerate((type1, type2)) if t in DISK_TYPES)
    pairs = tuple(itertools.combinations(range(kk), 2))
    circle_runs = [(k, ("ring", j)) for k in range(kk) for j in range(CIRCLE_STARTS)]
    circle_runs += [(k, ("apex", j, sg)) for k in range(kk) for j, (i, _) in enumerate(disks)
                    if owner[k] != i for sg in (1.0, -1.0)]          # a cylinder's own side is 90° from its caps
    sphere_runs = SPHERE_STARTS + 2 * len(disks)
    width = kk + 2 * len(disks)
    cols = np.arange(width)
    rows = [np.isin(cols, pair) for pair in pairs for _ in range(2)]
    rows += [np.isin(cols, [kk + 2 * j, kk + 2 * j + 1]) for j in range(len(disks)) for _ in range(2)]
    rank = [0] * len(rows) + [1] * len(circle_runs) + [2] * sphere_runs
    rows += [cols == k for k, _ in circle_runs] + [np.zeros(width, bool)] * sphere_runs
    return _Layout(owner, disks, pairs, tuple(circle_runs), sphere_runs,
                   np.array(rows, bool).reshape(len(rows), width), np.array(rank))


def _top(values: Array, count: int) -> Array:
    """Indices of the ``count`` best local maxima of ``values`` (last axis; ``_NEIGHBOURS``
    graph on the sphere, cyclic on a circle), then the best other samples."""
    if values.shape[-1] == SPHERE_SAMPLES:
        peak = values >= jnp.max(values[..., _NEIGHBOURS], axis=-1)
    else:
        peak = (values >= jnp.roll(values, 1, axis=-1)) & (values >= jnp.roll(values, -1, axis=-1))
    rank = jnp.where(peak, values, values - 2.0 * (jnp.max(values, axis=-1, keepdims=True) -
                                                    jnp.min(values, axis=-1, keepdims=True)) - 1.0)
    return jax.lax.top_k(rank, count)[1]


def _search(lay: _Layout, p: _Pair) -> tuple[Array, Array]:
    """The maximiser ``n*`` of ``s`` over all strata and the winner's index (module docstring)."""
    dt = p.d.dtype
    kk = p.axes.shape[0]
    perp = jax.vmap(_basis)(p.axes)[0] if kk else jnp.zeros((0, 3), dt)
    # 0-D: crossings of two circles (parallel axes: a point of both circles), cap normals
    apexes = [p.axes[k] for _, k in lay.disks]
    points = [jnp.zeros((0, 3), dt)]
    for k, l in lay.pairs:
        x = safe_unit(jnp.cross(p.axes[k], p.axes[l]), perp[k])
        points.append(jnp.stack([x, -x]))
    points = jnp.concatenate([*points, *[jnp.stack([x, -x]) for x in apexes]])
    # 1-D: on each circle a_k·n = 0, the best local maxima of its samples and the points nearest
    # to the cap normals (where the cap's cone makes a narrow peak)
    circ = jnp.asarray(_CIRCLE, dt)
    ring = circ[None, :, :1] * perp[:, None, :] + circ[None, :, 1:] * jnp.cross(p.axes, perp)[:, None, :]
    pick = _top(_gap(p, ring), CIRCLE_STARTS)                                   # (K, CIRCLE_STARTS)
    starts = []
    for k, start in lay.circle_runs:
        if start[0] == "ring":
            starts.append(ring[k, pick[k, start[1]]])
        else:
            x = start[2] * apexes[start[1]]
            starts.append(safe_unit(x - (x @ p.axes[k]) * p.axes[k], perp[k]))
    # 2-D: the best local maxima of the Fibonacci samples, and the cap normals
    sphere = jnp.asarray(_SPHERE, dt)
    starts = jnp.concatenate([jnp.stack(starts) if starts else jnp.zeros((0, 3), dt),
                              sphere[_top(_gap(p, sphere), SPHERE_STARTS)],
                              *[jnp.stack([x, -x]) for x in apexes]])
    # per run: the circle's axis (0 on the sphere) and the kink circles it sees
    proj = p.axes[None, :, :] - (p.axes @ p.axes.T)[:, :, None] * p.axes[:, None, :]
    proj = safe_unit(proj) * (1.0 - jnp.eye(kk, dtype=dt))[:, :, None]
    index = np.array([k for k, _ in lay.circle_runs], int)
    kinks = jnp.concatenate([proj[index], jnp.broadcast_to(p.axes, (lay.sphere_runs, kk, 3))])
    a = jnp.concatenate([p.axes[index], jnp.zeros((lay.sphere_runs, 3), dt)])
    free = jnp.arange(a.shape[0]) >= len(index)
    apex = jnp.stack(apexes) if apexes else jnp.zeros((0, 3), dt)
    disks = tuple(i for i, _ in lay.disks)
    step = jax.vmap(lambda ai, fi, ki, ni: _newton_step(p, disks, ai, fi, ki, apex, ni))
    found = jax.lax.fori_loop(0, NEWTON_ITERATIONS, lambda _, n: step(a, free, kinks, n), starts)
    cand = jnp.concatenate([points, found])
    value = _gap(p, cand)
    scale = jnp.linalg.norm(p.d) + jnp.sum(p.half) + jnp.linalg.norm(p.e1) + jnp.linalg.norm(p.e2)
    bias = 16.0 * jnp.finfo(dt).eps * scale * (2.0 - jnp.asarray(lay.rank, dt))
    win = jnp.argmax(value + bias)
    return cand[win], win


def _witness(lay: _Layout, p1: Parts, p2: Parts, n: Array, win: Array) -> tuple[Array, Array, Array]:
    """Frozen witness parameters ``(t (K,), u1 (3,), u2 (3,))`` at the normal ``n`` of the
    winning candidate (module docstring): the free ones from the tangential balance."""
    dt = n.dtype
    axes = jnp.concatenate([p1.axes, p2.axes])
    half = jnp.concatenate([p1.half, p2.half])
    kk = axes.shape[0]
    sigma = jnp.asarray([-1.0 if o == 0 else 1.0 for o in lay.owner], dt)
    active = jnp.asarray(lay.active, bool)[win]
    t0 = -sigma * jnp.sign(axes @ n)
    u = [round_direction(p1.round, n), -round_direction(p2.round, n)]
    cap = [jnp.zeros((), bool), jnp.zeros((), bool)]
    cols = [sigma[:, None] * half[:, None] * axes]
    for j, (i, _) in enumerate(lay.disks):
        cap[i] = active[kk + 2 * j]
        cols.append((-1.0 if i == 0 else 1.0) * (p1, p2)[i].round[:2])
    z = p2.center - p1.center + (jnp.where(active[:kk], 0.0, t0) * half * sigma) @ axes
    z = z - jnp.where(cap[0], 0.0, 1.0) * (p1.round.T @ u[0]) + jnp.where(cap[1], 0.0, 1.0) * (p2.round.T @ u[1])
    b = jnp.concatenate(cols).T * active.astype(dt)                       # (3, K + 2J)
    gram = b @ b.T
    lam = jnp.finfo(dt).eps * (jnp.trace(gram) + 1.0)
    y = -b.T @ jnp.linalg.solve(gram + lam * jnp.eye(3, dtype=dt), z - (z @ n) * n)
    t = jnp.where(active[:kk], jnp.clip(y[:kk], -1.0, 1.0), t0)
    for j, (i, _) in enumerate(lay.disks):
        w = y[kk + 2 * j: kk + 2 * j + 2]
        w = w / jnp.maximum(1.0, jnp.linalg.norm(w))
        u[i] = jnp.where(cap[i], jnp.concatenate([w, jnp.zeros((1,), dt)]), u[i])
    return t, u[0], u[1]


def _point(pt: Parts, t: Array, u: Array) -> Array:
    return pt.center + (t * pt.half) @ pt.axes + pt.round.T @ u


def convex_pair(type1: str, type2: str) -> Callable[[GeomFrame, GeomFrame], Contacts]:
    """The narrow-phase function ``f(g1, g2) -> Contacts`` (one slot) of two convex geoms of
    types ``type1``, ``type2`` (static; any of :data:`sodyn.collision.support.CONVEX_TYPES`).
    The slot holds the signed distance (negative: penetration), the normal from ``g1`` to
    ``g2`` and the midpoint of the witness points, whatever the distance; the caller compares
    it with the pair's margin."""
    lay = _layout(type1, type2)
    k1 = SEGMENTS[type1]

    def pair(g1: GeomFrame, g2: GeomFrame) -> Contacts:
        q1, q2 = parts(type1, g1), parts(type2, g2)
        f1, f2 = jax.lax.stop_gradient((q1, q2))
        gap = _Pair(f2.center - f1.center, jnp.concatenate([f1.axes, f2.axes]), jnp.concatenate([f1.half, f2.half]),
                    f1.round, f2.round)
        n, win = _search(lay, gap)
        t, u1, u2 = jax.lax.stop_gradient(_witness(lay, f1, f2, n, win))
        x1 = _point(q1, t[:k1], u1)
        x2 = _point(q2, t[k1:], u2)
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

__all__ = ["CIRCLE_SAMPLES", "CONVEX_PAIRS", "NEWTON_ITERATIONS", "SLOTS", "SPHERE_SAMPLES", "convex_pair"]
