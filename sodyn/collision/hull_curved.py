r"""Ellipsoid–mesh and cylinder–mesh: a curved geom against a convex hull, by the strata of the gap.

With ``n`` from the primitive ``P`` (geom 1) to the hull ``H`` (geom 2), the gap is
``s(n) = min_j n·v_j − h_P(n)`` (:mod:`sodyn.collision.hull_distance`), ``h_P`` the primitive's
support function: ``c·n + |A n|`` for an ellipsoid (``A = diag(s) Rᵀ``), ``c·n + ℓ |z·n| +
r |(I − z zᵀ) n|`` for a cylinder.  The signed distance ``max s`` is attained in one stratum:
a hull feature (vertex, edge, face) times a primitive feature, where both support functions are
smooth.  Every stratum's stationary point is a candidate, kept only if its hull feature really
supports ``H`` there (otherwise it is no point of that stratum), and valued exactly; the best wins.

* **Hull faces** (0-D): ``n = −m_f``, gap ``−o_f − h_P(n)``.
* **Hull vertices** (2-D, point against ``P``): for an ellipsoid the outward normals at the
  boundary points nearest ``y`` (the vertex in local axes): the root ``λ > −s²_min`` of
  ``Σ s_k² y_k²/(s_k² + λ)² = 1`` (Newton from the largest one-term root, monotone since the left
  side's square root is convex and decreasing; the centre's degenerate case in closed form) and,
  for ``y`` inside, the other local minimum of the distance to the boundary, beyond the shortest
  axis' far end (the root of ``(−s²_mid, −s²_min)`` next to ``−s²_min``, by Newton from its
  one-term root), ``FOOT_ITERATIONS`` steps each; the foot point is ``x_k = s_k² y_k/(s_k² + λ)``
  and its normal ``∝ y_k/(s_k² + λ)``.  For a cylinder: the side (``n`` radial, ``n ⊥ z``) and the
  nearest point of each cap disk.
* **Hull edges** (1-D, ``n ⊥`` the edge ``e``): maximise ``φ(n) = n·(v_a − c') − |A n|`` on the
  circle (for a cylinder ``c' = c ± ℓ z`` and ``A = r (I − z zᵀ)``: a cap disk, whose rim is the
  support), by ``CIRCLE_ITERATIONS`` safeguarded Newton steps in the circle's angle, applied as
  the retraction ``n ← unit(n + δ (e × n))``, from the circle points nearest the edge seen from the
  primitive's centre, the middle of the edge's reversed Gauss arc and, for a cap disk, the cap
  normal (where the disk's cone makes a narrow ridge).
* **Cylinder flats** (0-D): the cap normals ``±z``, and ``±unit(e × z)`` for each edge (edge
  against the side).

A vertex candidate is kept when ``n·v_j`` is within rounding of ``min_k n·v_k``, an edge
candidate when ``−n`` lies on the edge's Gauss arc.  The primitive's gap is always exact, so the
winner is exact whenever its stratum's stationary point was found; deep overlaps where a vertex
or an edge has several local maxima in its stratum are covered by the starts only.

**Witness and derivatives.**  Under ``stop_gradient`` the winner gives the hull point (the vertex,
the edge point or the face foot) and the primitive point ``x_P = x_H − s n`` (or the primitive's
support point for an edge or face winner), frozen as material parameters: affine weights on the
hull, ``u = S⁻¹Rᵀ(x − c)`` on the ellipsoid, ``(x, y)/r`` and ``z/ℓ`` in the cylinder's axes.
``distance = n·(x_H − x_P)`` from the differentiable geometry (one slot).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import Array

from sodyn.collision.hull_distance import affine, along, anchor, line_points
from sodyn.collision.hull_topology import Polytope, core_polytope, core_vertices
from sodyn.collision.support import safe_unit
from sodyn.collision.types import Contacts, GeomFrame, MeshFrame
from sodyn.contraction import contract
from sodyn.spatial import cross, dot, mtv, mv

#: Newton steps of the nearest-boundary-point equation (ellipsoid vertices).
FOOT_ITERATIONS = 12
#: Safeguarded Newton steps on an edge's circle, and the longest step (rad).
CIRCLE_ITERATIONS, MAX_STEP = 8, 0.5


def _support_value(type_: str, g: GeomFrame, n: Array) -> Array:
    """``h_P(n)`` for directions ``n (..., 3)``."""
    r, c, s = g.rotation, g.position, g.size
    m = mtv(r, n)                                                # local components
    if type_ == "ellipsoid":
        return dot(n, c) + jnp.sqrt(dot(m * s, m * s))
    return dot(n, c) + s[1] * jnp.abs(m[..., 2]) + s[0] * jnp.sqrt(m[..., 0] ** 2 + m[..., 1] ** 2)


def _support_point(type_: str, g: GeomFrame, n: Array) -> Array:
    """A support point of ``P`` in direction ``n`` (flat supports: their middle)."""
    r, c, s = g.rotation, g.position, g.size
    m = mtv(r, n)
    if type_ == "ellipsoid":
        return c + mv(r, s * safe_unit(s * m))
    radial = safe_unit(m * jnp.array([1.0, 1.0, 0.0], m.dtype), floor=jnp.sqrt(jnp.finfo(m.dtype).eps))
    return c + mv(r, s[0] * radial + jnp.array([0.0, 0.0, 1.0], m.dtype) * s[1] * jnp.sign(m[2]))


def _foot_normals(y: Array, s: Array) -> tuple[Array, Array]:
    """Unit outward normals (local axes) of the ellipsoid ``|y/s| = 1`` at its boundary points
    nearest ``y`` and, for ``y`` inside, at the other local minimum of the distance (beyond the
    shortest axis' opposite end), and whether that second one exists (module docstring)."""
    dt, tiny = y.dtype, jnp.finfo(y.dtype).tiny
    b, a = s * s, s * jnp.abs(y)
    k = jnp.argmin(s)
    b_min = b[k]
    b_mid = jnp.min(jnp.where(jnp.arange(3) == k, jnp.inf, b))
    lam0 = jnp.max(a - b)

    def f_and_slope(lam):
        x = b + lam
        x = jnp.where(jnp.abs(x) < tiny, tiny, x)
        q = dot(a / x, a / x)
        return jnp.sqrt(q) - 1.0, -dot(a * a, 1 / x ** 3) / jnp.maximum(jnp.sqrt(q), tiny)

    def newton(_, lam):
        f, df = f_and_slope(lam)
        return lam - f / jnp.where(df == 0, -1.0, df)

    lam = jax.lax.fori_loop(0, FOOT_ITERATIONS, newton, jnp.maximum(lam0, -b_min))
    normal = y / jnp.maximum(b + lam, tiny)
    # the centre's case: y on the smallest axis' plane and no root beyond its pole
    other = jnp.arange(3) != k
    xk = jnp.where(other, b * y / jnp.where(other, jnp.maximum(b - b_min, tiny), 1.0), 0.0)
    rest = dot(jnp.where(other, xk, 0.0), xk / b)
    xk = jnp.where(other, xk, s * jnp.sqrt(jnp.maximum(1.0 - rest, 0.0)))
    degenerate = (lam0 <= -b_min * (1 - 1e3 * jnp.finfo(dt).eps)) & (rest <= 1.0)
    first = safe_unit(jnp.where(degenerate, xk / b, normal), jax.nn.one_hot(k, 3, dtype=dt))
    # the root of (−b_mid, −b_min) next to −b_min: Newton from its one-term root, monotone from the right
    start = -b_min - a[k]
    lam2 = jax.lax.fori_loop(0, FOOT_ITERATIONS, newton, start)
    lam2 = jnp.clip(lam2, -b_mid, -b_min)
    f2, _ = f_and_slope(lam2)
    x2 = b + lam2
    ok = (start > -b_mid) & (jnp.abs(f2) < 1e3 * jnp.finfo(dt).eps ** 0.5) & jnp.all(jnp.abs(x2) > tiny)
    second = safe_unit(y / jnp.where(jnp.abs(x2) > tiny, x2, 1.0), -first)
    return jnp.stack([first, second]), jnp.stack([jnp.ones((), bool), ok])


def _circle_newton(q: Array, a: Array, e: Array, n: Array) -> Array:
    """The maximiser of ``φ(n) = n·q − |A n|`` on the great circle ``⊥ e`` from the unit ``n`` on
    it: safeguarded Newton steps in the circle's angle ``θ`` (``φ'`` and ``φ''`` along the tangent
    ``t = e × n``), each applied as ``n ← unit(n + δ t)`` (a retraction, exact to second order),
    the best of the full, a quarter and no step kept."""
    tiny = jnp.finfo(q.dtype).tiny

    def phi(m):
        am = mv(a, m)
        return dot(m, q) - jnp.sqrt(dot(am, am))

    def step(_, n):
        tn = cross(e, n)
        an, at = mv(a, n), mv(a, tn)
        nat, nn = dot(an, at), jnp.maximum(jnp.sqrt(dot(an, an)), tiny)
        d1 = dot(tn, q) - nat / nn
        d2 = -dot(n, q) - (dot(at, at) - nn * nn) / nn + nat ** 2 / nn ** 3
        delta = jnp.where(d2 < 0, -d1 / jnp.where(d2 < 0, d2, -1.0), jnp.sign(d1) * MAX_STEP)
        delta = jnp.clip(delta, -MAX_STEP, MAX_STEP)
        trials = n + jnp.array([1.0, 0.25, 0.0], n.dtype)[:, None] * delta * tn
        trials = trials * jax.lax.rsqrt(dot(trials, trials))[:, None]
        return trials[jnp.argmax(phi(trials))]

    return jax.lax.fori_loop(0, CIRCLE_ITERATIONS, step, n)


def _edge_frames(h: Polytope) -> tuple[Array, Array, Array]:
    """Per hull edge: first vertex, unit direction, and a unit vector ``⊥`` it."""
    va, vb = h.vertices[h.edges[:, 0]], h.vertices[h.edges[:, 1]]
    e = safe_unit(vb - va)
    helper = jax.nn.one_hot(jnp.argmin(jnp.abs(e), axis=-1), 3, dtype=e.dtype)
    return va, e, safe_unit(cross(e, helper))


def _on_arc(h: Polytope, n: Array) -> Array:
    """Whether ``−n (E, 3)`` lies on each edge's Gauss arc (within rounding): on the side of ``A``
    and of ``B`` towards the other across the unit normal ``N̂`` of the arc's plane, and in the
    arc's hemisphere (so that a short arc's antipode does not pass at the rounding level)."""
    a, b = h.arcs[:, 0], h.arcs[:, 1]
    nab = safe_unit(cross(a, b))
    x = -n
    tol = -1e3 * jnp.finfo(n.dtype).eps
    return ((dot(x, cross(nab, a)) >= tol) & (dot(x, cross(b, nab)) >= tol) & (dot(x, a + b) > 0)
            & h.edge_valid)


def _candidates(type_: str, g: GeomFrame, h: Polytope) -> tuple[Array, Array, Array, Array]:
    """Candidate normals ``(K, 3)``, their hull values ``min_j n·v_j`` (``−inf`` when the feature
    does not support the hull there), the feature kind (0 vertex, 1 edge, 2 face, 3 any) and index."""
    dt = h.vertices.dtype
    r, c, s = g.rotation, g.position, g.size
    v = h.vertices
    tol = 1e3 * jnp.finfo(dt).eps * (jnp.max(jnp.abs(v - c)) + jnp.max(s))
    nf, ne, nv = h.normal.shape[0], h.edges.shape[0], v.shape[0]
    normals, values, kinds, index = [], [], [], []

    def add(n, val, kind, idx):
        normals.append(n)
        values.append(val)
        kinds.append(jnp.full(n.shape[:1], kind, jnp.int32))
        index.append(idx.astype(jnp.int32))

    add(-h.normal, jnp.where(h.face_valid, -h.offset, -jnp.inf), 2, jnp.arange(nf))

    def vertices(n, ok=True):
        proj = along(v, n)                                              # (V, V): candidate j, vertex k
        own = jnp.diagonal(proj)
        add(n, jnp.where((own <= jnp.min(proj, axis=1) + tol) & ok, own, -jnp.inf), 0, jnp.arange(nv))

    va, e, u = _edge_frames(h)

    def on_circle(g):
        return safe_unit(g - dot(g, e)[:, None] * e, u)

    mid = 0.5 * (va + v[h.edges[:, 1]])
    arc_mid = -(h.arcs[:, 0] + h.arcs[:, 1])

    def edges(n):
        add(n, jnp.where(_on_arc(h, n), dot(n, va), -jnp.inf), 1, jnp.arange(ne))

    if type_ == "ellipsoid":
        feet, ok = jax.vmap(lambda y: _foot_normals(y, s))(mtv(r, v - c))
        vertices(mv(r, feet[:, 0]))
        vertices(mv(r, feet[:, 1]), ok[:, 1])
        a = s[:, None] * r.T
        for start in (mid - c, arc_mid):
            edges(jax.vmap(lambda q, ee, nn: _circle_newton(q, a, ee, nn))(va - c, e, on_circle(start)))
    else:
        z = r[:, 2]
        perp = jnp.eye(3, dtype=dt) - jnp.outer(z, z)
        rel = v - c
        vertices(safe_unit(mv(perp, rel), r[:, 0]))                                # against the side
        for sigma in (1.0, -1.0):
            centre = c + sigma * s[1] * z
            radial = mv(perp, v - centre)
            length = jnp.sqrt(dot(radial, radial))[:, None]
            near = centre + radial * jnp.minimum(1.0, s[0] / jnp.maximum(length, jnp.finfo(dt).tiny))
            vertices(safe_unit(v - near, sigma * z))                               # against a cap disk
            for start in (mid - centre, arc_mid, jnp.broadcast_to(sigma * z, mid.shape)):
                edges(jax.vmap(lambda q, ee, nn: _circle_newton(q, s[0] * perp, ee, nn))(
                    va - centre, e, on_circle(start)))
        side = safe_unit(cross(e, z))
        edges(side)
        edges(-side)
        caps = jnp.stack([z, -z])
        add(caps, jnp.min(along(v, caps), axis=1), 3, jnp.zeros(2))
    return (jnp.concatenate(normals), jnp.concatenate(values), jnp.concatenate(kinds), jnp.concatenate(index))


def _params(type_: str, g: GeomFrame, x: Array) -> Array:
    """Material parameters of the primitive point ``x`` (module docstring)."""
    y = mtv(g.rotation, x - g.position)
    if type_ == "ellipsoid":
        return y / g.size
    return y / jnp.stack([g.size[0], g.size[0], jnp.maximum(g.size[1], jnp.finfo(y.dtype).tiny)])


def _material(type_: str, g: GeomFrame, p: Array) -> Array:
    """The world point of material parameters ``p`` (differentiable in ``g``)."""
    scale = g.size if type_ == "ellipsoid" else jnp.stack([g.size[0], g.size[0], g.size[1]])
    return g.position + mv(g.rotation, scale * p)


def curved_pair(type_: str) -> Callable[[GeomFrame, MeshFrame], Contacts]:
    """The narrow phase ``f(g1, g2) -> Contacts`` (1 slot) of a ``type_`` geom (``"ellipsoid"`` or
    ``"cylinder"``) and a mesh (module docstring)."""

    def pair(g1: GeomFrame, g2: MeshFrame) -> Contacts:
        v2 = core_vertices("mesh", g2)
        f1, f2 = jax.lax.stop_gradient((g1, g2))
        h = core_polytope("mesh", f2)
        dt = h.vertices.dtype
        n_all, hull_val, kind, index = _candidates(type_, f1, h)
        win = jnp.argmax(hull_val - _support_value(type_, f1, n_all))
        n, k, i = n_all[win], kind[win], index[win]
        gap = jnp.min(along(h.vertices, n)) - _support_value(type_, f1, n)
        xp = _support_point(type_, f1, n)
        # the hull witness by the winner's feature: a vertex (or the support vertex at a cap normal)
        j = jnp.where(k == 0, i, jnp.argmin(along(h.vertices, n))).astype(jnp.int32)
        vertex = (jnp.stack([j, j, j]), jnp.array([1.0, 0.0, 0.0], dt))
        # an edge: its point nearest the primitive's support set (a side line of a cylinder ⊥ n)
        e = h.edges[jnp.clip(i, 0, h.edges.shape[0] - 1)]
        va, vb = h.vertices[e[0]], h.vertices[e[1]]
        axis = f1.rotation[:, 2] * (f1.size[1] if type_ == "cylinder" else 0.0)
        side = (jnp.abs(dot(axis, n)) <= 1e3 * jnp.finfo(dt).eps * jnp.sqrt(dot(axis, axis))) & (type_ == "cylinder")
        t, u = line_points(va, vb - va, xp - axis, 2.0 * axis)
        ev = vb - va
        t_foot = dot(xp + gap * n - va, ev) / jnp.maximum(dot(ev, ev), jnp.finfo(dt).tiny)
        t = jnp.where(side, t, jnp.clip(t_foot, 0.0, 1.0))
        xp_edge = jnp.where(side, xp - axis + 2.0 * u * axis, xp)
        edge = (jnp.stack([e[0], e[1], e[1]]), jnp.stack([1 - t, t, 0 * t]))
        # a face: the foot of the primitive's support point
        tri = anchor(h, jnp.clip(i, 0, h.normal.shape[0] - 1))
        face = (tri, affine(xp + gap * n, *h.vertices[tri]))
        pick = jnp.where(k == 3, 0, k)
        i2, w2 = (jnp.stack(xs)[pick] for xs in zip(vertex, edge, face))
        xh = contract("...k,...kd->...d", w2, h.vertices[i2])
        xp = jnp.where((k == 0) | (k == 3), xh - gap * n, jnp.where(k == 1, xp_edge, xp))
        n, p, i2, w2 = jax.lax.stop_gradient((n, _params(type_, f1, xp), i2, w2))
        x1, x2 = _material(type_, g1, p), contract("...k,...kd->...d", w2, v2[i2])
        d = dot(n, x2 - x1)
        return Contacts(d[None], (0.5 * (x1 + x2))[None], n[None])

    pair.__name__ = f"{type_}_mesh"
    pair.__doc__ = f"Contact of a {type_} ``g1`` and a mesh ``g2``, 1 slot (:func:`curved_pair`)."
    return pair


#: The pair functions, keyed by geom type names (the mesh second).
CURVED_PAIRS: dict[tuple[str, str], Callable] = {("ellipsoid", "mesh"): curved_pair("ellipsoid"),
                                                 ("cylinder", "mesh"): curved_pair("cylinder")}
#: Contact slots per pair type.
SLOTS: dict[tuple[str, str], int] = dict.fromkeys(CURVED_PAIRS, 1)

__all__ = ["CIRCLE_ITERATIONS", "CURVED_PAIRS", "FOOT_ITERATIONS", "MAX_STEP", "SLOTS", "curved_pair"]
