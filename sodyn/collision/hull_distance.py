r"""Signed distance and normal between two convex polytopes (:class:`~sodyn.collision.
hull_topology.Polytope` cores), exact in a fixed number of operations.

**Gap.**  For a unit ``n`` (from core 1 to core 2) the gap ``s(n) = min_j n·v²_j − max_i n·v¹_i``
is the separation of the two vertex sets along ``n``; every unit ``n`` gives a lower bound of the
signed distance, and the signed distance is ``max_{|n|=1} s(n)``, attained at the contact normal.
So candidates from any source compare by their exact gap alone, and the winner is the largest.

**Penetration: separating axes.**  When the cores overlap, the origin lies inside the Minkowski
difference ``M = K₂ − K₁`` and ``−s`` at the maximiser is its distance to the boundary of ``M``:
the smallest offset over the facets of ``M``.  Those facets are the faces of ``K₁`` (``n = m``,
gap ``min_j m·v²_j − o``), those of ``K₂`` (``n = −m``, gap ``min_i m·v¹_i − o``), and one
parallelogram per pair of edges whose Gauss arcs cross (arc of edge 1, and the antipodal arc of
edge 2: the directions where both edges are the supports).  For such a pair the normal is the
crossing point ``±unit(N₁ × N₂)`` (``N`` the arcs' plane normals, the sign that lies on both
arcs: ``X`` is on the minor arc ``AB`` iff ``X·(N × A) > 0`` and ``X·(B × N) > 0``), and the
gap is ``n·(p₂ − p₁)`` for points ``p`` of the two edges, with no search over vertices.  All
``E₁ E₂`` pairs are tested (one fused reduction); the best is re-evaluated by its exact gap.

**Separation: GJK.**  Apart, the maximiser is the direction of the point ``x`` of ``M`` nearest
the origin, which GJK finds: ``x`` the nearest point of a simplex of at most four support points
``w = v²_j − v¹_i``, each step adding the support point minimising ``x·w`` and keeping the
smallest sub-simplex holding the new nearest point (all 15 sub-simplices projected, the nearest
projection with positive barycentric coordinates kept: branch-free).  For polytopes GJK ends
exactly after finitely many steps; ``GJK_ITERATIONS`` steps are run, a converged state (no
progress, or ``x = 0``: touching or overlapping) kept as it is.  Its normal ``x/|x|`` joins the
candidates with its exact gap, so an unconverged run can only lose.

**Why these two.**  MuJoCo's convex narrow phase is GJK with EPA (the expanding polytope) for
penetration, iterated to a tolerance.  EPA is exact for polytopes after finitely many steps, but
how many is not known in advance, and its polytope (faces, adjacency, horizon) is costly to keep in
fixed-size arrays.  The separating-axis enumeration needs no iteration at all: with the hull's
topology (:mod:`~sodyn.collision.hull_topology`) every facet of ``M`` is tested at once, a fixed
program whose answer is exact.  GJK for the separated case does iterate, but on polytopes it ends
in a few steps, and being a lower bound like every other candidate, its answer can only be
improved on.  Normals and values are then independent of the order of vertices and faces, and of
the previous step (no warm start).

**Cost** per pair: ``GJK_ITERATIONS`` support searches over ``V₁ + V₂`` vertices, the faces'
``F₁ V₂ + F₂ V₁`` products, and ``7 E₁ E₂`` bilinear forms of the edge pairs, which dominate for
large hulls (``E ≈ 3V``).

**Witnesses.**  The winner gives a pair of material points, each an affine combination of at
most three vertices of its core (:class:`Witness`): GJK's barycentric points; for a face, the
other core's support vertex and its foot on the face plane, in the face's anchor triangle (three
of its vertices; any affine frame of a rigid planar face names the same material point); for two
edges, the nearest points of their lines.  Ties prefer faces, then GJK, then edges, so that a
resting face wins over the coplanar edges of its outline.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from sodyn.collision.hull_topology import Polytope
from sodyn.collision.support import safe_unit
from sodyn.contraction import contract
from sodyn.spatial import cross, dot

#: GJK steps (each: one support search over both vertex sets, one 15-subset projection).
GJK_ITERATIONS = 16

#: Winner kinds.
GJK, FACE1, FACE2, EDGES = 0, 1, 2, 3

_PAIRS = np.array([(a, b) for a in range(4) for b in range(a + 1, 4)])
_TRIANGLES = np.array([(a, b, c) for a in range(4) for b in range(a + 1, 4) for c in range(b + 1, 4)])


class Witness(NamedTuple):
    """A material point pair: ``x₁ = Σ_k w1_k v¹[i1_k]``, ``x₂ = Σ_k w2_k v²[i2_k]`` (``(3,)``
    integer indices into each core's vertices, ``(3,)`` affine weights summing to 1)."""

    i1: Array
    w1: Array
    i2: Array
    w2: Array

    def points(self, v1: Array, v2: Array) -> tuple[Array, Array]:
        """``(x₁, x₂)`` for core vertices ``v1``, ``v2`` (differentiable in them)."""
        return contract("...k,...kd->...d", self.w1, v1[self.i1]), contract("...k,...kd->...d", self.w2, v2[self.i2])


class Search(NamedTuple):
    """The search's result: unit ``normal`` (from core 1 to core 2), its exact ``gap``, the
    winner ``kind`` (``GJK``, ``FACE1``, ``FACE2``, ``EDGES``) and ``face`` (the face index for
    a face winner), and the :class:`Witness`."""

    normal: Array
    gap: Array
    kind: Array
    face: Array
    witness: Witness


def along(v: Array, n: Array) -> Array:
    """``n·v_i`` for the rows of ``v (V, 3)`` and directions ``n (..., 3)``: ``(..., V)``."""
    return contract("...vc,...c->...v", v, n)


def gap(v1: Array, v2: Array, n: Array) -> Array:
    """``s(n) = min_j n·v²_j − max_i n·v¹_i`` for directions ``n (..., 3)``."""
    return jnp.min(along(v2, n), axis=-1) - jnp.max(along(v1, n), axis=-1)


def affine(x: Array, a: Array, b: Array, c: Array) -> Array:
    """Affine weights ``λ (3,)`` with ``λ₀ a + λ₁ b + λ₂ c`` the point of the plane (or line, for
    ``c = b``) of ``a, b, c`` nearest ``x``: the least-squares solution, regularised at the
    rounding level so that a degenerate frame gives weight 0 to its redundant point."""
    e1, e2, r = b - a, c - a, x - a
    g00, g01, g11 = dot(e1, e1), dot(e1, e2), dot(e2, e2)
    reg = jnp.finfo(x.dtype).eps * (g00 + g11 + jnp.finfo(x.dtype).tiny)
    g00, g11 = g00 + reg, g11 + reg
    r0, r1 = dot(e1, r), dot(e2, r)
    det = g00 * g11 - g01 * g01
    ok = det > jnp.finfo(x.dtype).tiny
    det = jnp.where(ok, det, 1.0)
    mu0 = jnp.where(ok, (g11 * r0 - g01 * r1) / det, 0.0)
    mu1 = jnp.where(ok, (g00 * r1 - g01 * r0) / det, 0.0)
    return jnp.stack([1.0 - mu0 - mu1, mu0, mu1], axis=-1)


def anchor(poly: Polytope, f: Array) -> Array:
    """Three well-spread vertex indices of face ``f``'s polygon (its anchor triangle)."""
    row, n = poly.polygon[f], poly.count[f]
    return jnp.stack([row[0], row[n // 3], row[(2 * n) // 3]])


def _subdistance(w: Array, act: Array) -> tuple[Array, Array]:
    """The point of the hull of the active rows of ``w (4, 3)`` nearest the origin: barycentric
    weights ``(4,)`` (zero off its support) and its point (module docstring)."""
    dt, tiny = w.dtype, jnp.finfo(w.dtype).tiny
    eps = jnp.finfo(dt).eps
    cand_l, cand_x, cand_ok = [], [], []
    for k in range(4):                                             # vertices
        cand_l.append(jax.nn.one_hot(k, 4, dtype=dt))
        cand_x.append(w[k])
        cand_ok.append(act[k])
    for a, b in _PAIRS:                                            # segments
        e = w[b] - w[a]
        ee = dot(e, e)
        t = -dot(w[a], e) / jnp.maximum(ee, tiny)
        cand_l.append(jax.nn.one_hot(a, 4, dtype=dt) * (1 - t) + jax.nn.one_hot(b, 4, dtype=dt) * t)
        cand_x.append(w[a] + t * e)
        cand_ok.append(act[a] & act[b] & (ee > tiny) & (t > 0) & (t < 1))
    for a, b, c in _TRIANGLES:                                     # triangles
        e1, e2 = w[b] - w[a], w[c] - w[a]
        g00, g01, g11 = dot(e1, e1), dot(e1, e2), dot(e2, e2)
        r0, r1 = -dot(e1, w[a]), -dot(e2, w[a])
        det = g00 * g11 - g01 ** 2
        ok = det > 16 * eps * g00 * g11 + tiny
        det = jnp.where(ok, det, 1.0)
        mu0, mu1 = (g11 * r0 - g01 * r1) / det, (g00 * r1 - g01 * r0) / det
        lam = jnp.stack([1 - mu0 - mu1, mu0, mu1])
        cand_l.append(jnp.zeros(4, dt).at[np.array([a, b, c])].set(lam))
        cand_x.append(w[a] + mu0 * e1 + mu1 * e2)
        cand_ok.append(act[a] & act[b] & act[c] & ok & jnp.all(lam > 0))
    d1, d2, d3 = w[1] - w[0], w[2] - w[0], w[3] - w[0]              # the tetrahedron (Cramer)
    c23, c31, c12 = cross(d2, d3), cross(d3, d1), cross(d1, d2)
    det = dot(d1, c23)
    ok = jnp.abs(det) > 16 * eps * jnp.sqrt(dot(d1, d1) * dot(d2, d2) * dot(d3, d3)) + tiny
    det = jnp.where(ok, det, 1.0)
    mu = -jnp.stack([dot(w[0], c23), dot(w[0], c31), dot(w[0], c12)]) / det
    lam = jnp.concatenate([(1 - mu[0] - mu[1] - mu[2])[None], mu])
    cand_l.append(lam)
    cand_x.append(jnp.zeros(3, dt))
    cand_ok.append(jnp.all(act) & ok & jnp.all(lam > 0))
    x = jnp.stack(cand_x)
    norm = jnp.where(jnp.stack(cand_ok), dot(x, x), jnp.inf)
    best = jnp.argmin(norm)
    return jnp.stack(cand_l)[best], x[best]


def gjk(v1: Array, v2: Array, direction: Array) -> tuple[Array, Witness]:
    """GJK on ``M = {v²_j − v¹_i}`` (module docstring), started from the support point
    minimising ``direction·w``: the nearest point ``x`` of ``M`` (``0`` when the cores touch or
    overlap) and its barycentric :class:`Witness`."""
    dt = v1.dtype
    eps, tiny = jnp.finfo(dt).eps, jnp.finfo(dt).tiny

    def support(d):
        i, j = jnp.argmax(along(v1, d)).astype(jnp.int32), jnp.argmin(along(v2, d)).astype(jnp.int32)
        return v2[j] - v1[i], i, j

    w0, i0, j0 = support(direction)
    state = (jnp.zeros((4, 3), dt).at[0].set(w0), jnp.zeros(4, jnp.int32).at[0].set(i0),
             jnp.zeros(4, jnp.int32).at[0].set(j0), jnp.arange(4) == 0, jax.nn.one_hot(0, 4, dtype=dt), w0,
             jnp.zeros((), bool))

    def step(_, st):
        w, i1, i2, act, lam, x, done = st
        xx = dot(x, x)
        s, i, j = support(x)
        xs = dot(x, s)
        progress = xx - xs
        stop = done | (xx <= tiny) | (progress <= 64 * eps * (xx + jnp.abs(xs)))
        slot = jnp.argmin(act)                                   # a free slot (fewer than 4 active)
        w2 = w.at[slot].set(s)
        act2 = act.at[slot].set(True)
        lam2, x2 = _subdistance(w2, act2)
        new = (w2, i1.at[slot].set(i), i2.at[slot].set(j), lam2 > 0, lam2, x2, stop)
        return jax.tree.map(lambda a, b: jnp.where(stop, a, b), (w, i1, i2, act, lam, x, stop), new)

    w, i1, i2, act, lam, x, _ = jax.lax.fori_loop(0, GJK_ITERATIONS, step, state)
    keep = jnp.argsort(-jnp.where(act, lam, -1.0))[:3]
    weights = jnp.where(act[keep], lam[keep], 0.0)
    weights = weights / (weights[0] + weights[1] + weights[2])
    return x, Witness(i1[keep], weights, i2[keep], weights)


def _edge_pairs(p1: Polytope, p2: Polytope) -> tuple[Array, Array, Array, Array]:
    """The best edge–edge separating axis: its shortcut gap, unit normal and the two edges
    (module docstring); ``−inf`` when no pair of Gauss arcs crosses.  Every per-pair quantity is
    a bilinear form of per-edge vectors, so the ``E₁ × E₂`` table is a few ``(E₁, 3) (3, E₂)``
    products: with ``X = N₁ × N₂``, ``X·U₁ = N₂·(U₁ × N₁)``, ``X·U₂ = N₁·(N₂ × U₂)``,
    ``|X|² = |N₁|²|N₂|² − (N₁·N₂)²`` and ``X·(q₂ − q₁) = N₁·(N₂ × q₂) − N₂·(q₁ × N₁)``."""
    dt = p1.vertices.dtype
    a1, b1 = p1.arcs[:, 0], p1.arcs[:, 1]
    a2, b2 = -p2.arcs[:, 0], -p2.arcs[:, 1]
    n1, n2 = cross(a1, b1), cross(a2, b2)
    u1, w1, u2, w2 = cross(n1, a1), cross(b1, n1), cross(n2, a2), cross(b2, n2)
    q1, q2 = p1.vertices[p1.edges[:, 0]], p2.vertices[p2.edges[:, 0]]
    left = jnp.stack([cross(u1, n1), cross(w1, n1), n1, n1, n1, n1, cross(q1, n1)])          # (7, E1, 3)
    right = jnp.stack([n2, n2, cross(n2, u2), cross(n2, w2), n2, cross(n2, q2), n2])       # (7, E2, 3)
    t = sum(left[:, :, None, c] * right[:, None, :, c] for c in range(3))                  # (7, E1, E2)
    plus = (t[0] > 0) & (t[1] > 0) & (t[2] > 0) & (t[3] > 0)
    minus = (t[0] < 0) & (t[1] < 0) & (t[2] < 0) & (t[3] < 0)
    scale = dot(n1, n1)[:, None] * dot(n2, n2)[None, :]
    xx = scale - t[4] ** 2
    ok = (plus | minus) & (xx > 1e3 * jnp.finfo(dt).eps * scale) & p1.edge_valid[:, None] & p2.edge_valid[None]
    sign = jnp.where(plus, 1.0, -1.0) * jax.lax.rsqrt(jnp.where(ok, xx, 1.0))
    value = jnp.where(ok, sign * (t[5] - t[6]), -jnp.inf)
    best = jnp.argmax(value.reshape(-1))
    k1, k2 = (best // value.shape[1]).astype(jnp.int32), (best % value.shape[1]).astype(jnp.int32)
    n = safe_unit(cross(n1[k1], n2[k2])) * jnp.where(plus[k1, k2], 1.0, -1.0)
    return value[k1, k2], jnp.where(jnp.isfinite(value[k1, k2]), n, 0.0), k1, k2


def line_points(p: Array, d: Array, q: Array, e: Array) -> tuple[Array, Array]:
    """Parameters ``(t, u) ∈ [0, 1]²`` of the nearest points ``p + t d`` and ``q + u e`` of two
    segments (the lines' nearest points, clamped)."""
    r = q - p
    a, b, c, dr, er = dot(d, d), dot(d, e), dot(e, e), dot(d, r), dot(e, r)
    det = a * c - b * b
    ok = det > 1e-12 * a * c + jnp.finfo(p.dtype).tiny
    t = jnp.where(ok, (c * dr - b * er) / jnp.where(ok, det, 1.0), 0.5)
    u = jnp.where(ok, (b * dr - a * er) / jnp.where(ok, det, 1.0), 0.5)
    return jnp.clip(t, 0.0, 1.0), jnp.clip(u, 0.0, 1.0)


def search(p1: Polytope, p2: Polytope, c1: Array, c2: Array) -> Search:
    """The maximiser of the gap between two cores (module docstring), with its witness; ``c1``,
    ``c2``: the geoms' centres (GJK's first direction).  Call under ``stop_gradient``."""
    v1, v2 = p1.vertices, p2.vertices
    dt = v1.dtype
    eps = jnp.finfo(dt).eps
    zero3 = jnp.zeros(3, jnp.int32)
    x, wit_gjk = gjk(v1, v2, c2 - c1)
    n_gjk = safe_unit(x, safe_unit(c2 - c1, jnp.array([0.0, 0.0, 1.0], dt)))
    g_gjk = gap(v1, v2, n_gjk)
    cands = [(g_gjk, n_gjk, GJK, jnp.zeros((), jnp.int32), wit_gjk, 1.0)]
    if p1.normal.shape[0]:                                       # faces of core 1: n = m
        val = jnp.where(p1.face_valid, jnp.min(along(v2, p1.normal), axis=1) - p1.offset, -jnp.inf)
        f = jnp.argmax(val).astype(jnp.int32)
        n = p1.normal[f]
        j = jnp.argmin(along(v2, n)).astype(jnp.int32)
        tri = anchor(p1, f)
        w = affine(v2[j] - val[f] * n, *v1[tri])
        cands.append((val[f], n, FACE1, f, _witness(tri, w, j), 2.0))
    if p2.normal.shape[0]:                                       # faces of core 2: n = −m
        val = jnp.where(p2.face_valid, jnp.min(along(v1, p2.normal), axis=1) - p2.offset, -jnp.inf)
        f = jnp.argmax(val).astype(jnp.int32)
        n = -p2.normal[f]
        i = jnp.argmax(along(v1, n)).astype(jnp.int32)
        tri = anchor(p2, f)
        w = affine(v1[i] + val[f] * n, *v2[tri])
        cands.append((val[f], n, FACE2, f, Witness(jnp.stack([i, i, i]), jnp.array([1.0, 0, 0], dt), tri, w), 2.0))
    if p1.edges.shape[0] and p2.edges.shape[0]:                  # edge pairs
        _, n, k1, k2 = _edge_pairs(p1, p2)
        e1, e2 = p1.edges[k1], p2.edges[k2]
        t, u = line_points(v1[e1[0]], v1[e1[1]] - v1[e1[0]], v2[e2[0]], v2[e2[1]] - v2[e2[0]])
        wit = Witness(jnp.stack([e1[0], e1[1], e1[1]]), jnp.stack([1 - t, t, 0 * t]),
                      jnp.stack([e2[0], e2[1], e2[1]]), jnp.stack([1 - u, u, 0 * u]))
        g = jnp.where(jnp.any(n != 0), gap(v1, v2, n), -jnp.inf)
        cands.append((g, jnp.where(jnp.any(n != 0), n, n_gjk), EDGES, zero3[0], wit, 0.0))
    scale = jnp.max(jnp.abs(v1 - c1)) + jnp.max(jnp.abs(v2 - c2)) + jnp.sqrt(dot(c2 - c1, c2 - c1))
    score = jnp.stack([c[0] + c[5] * 16 * eps * scale for c in cands])
    win = jnp.argmax(score)
    pick = lambda k: jnp.stack([c[k] for c in cands])[win]  # noqa: E731
    witness = jax.tree.map(lambda *xs: jnp.stack(xs)[win], *[c[4] for c in cands])
    return Search(pick(1), pick(0), jnp.asarray([c[2] for c in cands])[win], pick(3).astype(jnp.int32), witness)


def _witness(tri: Array, w: Array, j: Array) -> Witness:
    """Face-of-core-1 witness: the foot in ``tri`` (weights ``w``), the vertex ``j`` of core 2."""
    return Witness(tri, w, jnp.stack([j, j, j]), jnp.array([1.0, 0.0, 0.0], w.dtype))


__all__ = ["EDGES", "FACE1", "FACE2", "GJK", "GJK_ITERATIONS", "Search", "Witness", "affine", "along", "anchor", "gap",
           "gjk", "line_points", "search"]
