r"""Contacts of a mesh geom (its convex hull) with a plane, a sphere, a capsule, a box or another
mesh: the deepest point from :mod:`sodyn.collision.hull_distance`, plus the points of a resting
face, in a fixed number of slots (:data:`SLOTS`).

**Plane–mesh** (8 slots).  With ``n`` the plane normal, every hull vertex lies at height
``h = n·(v − p₁)``.  Slots 0–3 are the four deepest vertices, deepest first (slot 0 is MuJoCo's
``mjc_PlaneConvex`` first contact), so every penetrating vertex has a slot when at most four
penetrate.  Slots 4–7 spread the support: the *candidates* are the vertices below the plane or
within ``SKIN`` of the deepest (MJX's manifold skin), and the slots take their extremes along
the four diagonals ``±t₁ ± t₂`` of the mesh's own axes projected into the plane (``t₁`` from the
geom's x axis, or its y axis when x is nearly normal to the plane; ``t₂ = n × t₁``).  A slot
repeating an earlier one is left unused (``distance = FAR``).  Neither set depends on which of
several vertices at nearly equal depth is the deepest, so a resting hull keeps the same points
from step to step; a selection that starts from the deepest vertex swaps its points whenever
that vertex changes, and a compliant law turns each swap into a jump of the contact torque.  A
box-like face gets its four corners.

**Polytope pairs.**  Sphere and capsule are their centre point and axis segment (their radius is
subtracted from the distance), box and mesh are polytopes (:mod:`~sodyn.collision.
hull_topology`).  Slot 0 is the exact contact: the search's normal, gap and witness.  When the winner is a face
of either core (the contact normal is that face's normal: a face resting on, or pierced by, the
other core), that face is the *reference* and the *incident* polygon is the other core's face
most opposed to it among the faces holding that core's deepest vertex (a segment or a point:
itself).  The incident polygon is clipped to the reference polygon's side planes
(Sutherland–Hodgman; each polygon cut to ``P_CLIP`` of its vertices, evenly spaced, the incident
one from its deepest vertex), and each clipped point is a contact at its height above the
reference plane, which is never below the exact gap.  Slot 0 moves to the deepest clipped point
when that realises the gap (a witness inside both faces, where a resting face has many); the
other slots take the clipped points that spread the contact polygon.  An edge–edge or GJK winner
(edges crossing, or cores apart with a vertex or an edge nearest) keeps its single point.

**Spread** (polytope pairs).  From the first point ``p₀`` (height ``h₀``): the point farthest
from ``p₀``, then the point farthest from their line, then the point farthest outside their
triangle (distances in the plane ``⊥ n``), each score lowered by ``SPREAD_WEIGHT·(h − h₀)`` so
that points higher above the contact lose to lower ones, and a slot whose best score is within
``DUPLICATE`` of the size of the existing ones is left unused (``distance = FAR``).

**Derivatives.**  The search, the faces and the clipping run under ``stop_gradient`` and give each
slot a frozen normal ``n`` and witness weights; the witness points ``x₁``, ``x₂`` are recomputed
from the differentiable core vertices (pose, box size, mesh vertices), ``distance =
n·(x₂ − x₁) − r₁ − r₂``: for slot 0 the Danskin derivative of ``max_n s(n)``, exact where the
contact features do not change; for a clipped point that of its height over the reference plane.
A slot whose witness on one core is the foot of the other core's point on a face (a face winner,
a clipped point) moves with that other point: with the face's normal ``m`` recomputed from its
anchor triangle's differentiable vertices (equal to ``n`` in value), ``position = x₂ − (d/2 + r₂) m``
(a face of core 1) or ``x₁ + (d/2 + r₁) m`` (of core 2), and the slot's normal is ``m`` (the foot's
frozen weights would move the position at half the sliding speed, and a frozen normal would not
turn with the face).  Other slots (GJK, crossing edges) keep ``position = (x₁ + x₂)/2 +
(r₁ − r₂) n/2`` and the frozen ``n``.  Plane–mesh distances ``n·(v − p₁)`` are
differentiated directly.  Values and gradients are finite at touching and parallel faces.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import Array

from sodyn.collision.hull_distance import FACE1, FACE2, Search, Witness, affine, along, anchor, search
from sodyn.collision.hull_topology import Polytope, core_polytope, core_vertices
from sodyn.collision.support import safe_unit
from sodyn.collision.types import FAR, Contacts, GeomFrame, MeshFrame
from sodyn.contraction import contract
from sodyn.spatial import cross, dot

#: Vertices kept of each polygon for clipping.
P_CLIP = 8
#: Penalty per metre of height above the first contact in the spread selection.
SPREAD_WEIGHT = 1.0
#: Distinct slots are at least this fraction of the pair's size apart.
DUPLICATE = 1e-3
#: Plane–mesh: the deepest vertices given slots, and the spread candidates' skin (m) above the
#: deepest vertex.
DEEPEST, SKIN = 4, 1e-3


def _radius(type_: str, g) -> Array:
    """The radius a sphere or capsule adds to its core (0 for a box or mesh)."""
    return g.size[0] if type_ in ("sphere", "capsule") else jnp.zeros((), g.size.dtype)


def spread(x: Array, h: Array, valid: Array, n: Array, p0: Array, h0: Array, extra: int,
           tol: Array) -> tuple[Array, Array]:
    """Indices ``(extra,)`` of points of ``x (Q, 3)`` (heights ``h``, mask ``valid``) that spread
    the contact polygon started at ``p0`` (height ``h0``) in the plane ``⊥ n``, and whether each
    is distinct (module docstring)."""
    rel = x - p0
    rel = rel - dot(rel, n)[:, None] * n
    pen = SPREAD_WEIGHT * jnp.maximum(h - h0, 0.0)
    out, ok = [], []
    dist = jnp.sqrt(dot(rel, rel))
    b = jnp.argmax(jnp.where(valid, dist - pen, -jnp.inf))
    out.append(b)
    ok.append(dist[b] > tol)
    if extra >= 2:
        u = safe_unit(rel[b])
        off = rel - dot(rel, u)[:, None] * u
        off = jnp.sqrt(dot(off, off))
        c = jnp.argmax(jnp.where(valid, off - pen, -jnp.inf))
        out.append(c)
        ok.append(ok[0] & (off[c] > tol))
    if extra >= 3:
        tri = [jnp.zeros(3, x.dtype), rel[b], rel[c]]
        outside = []
        for k in range(3):
            p, q, r = tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]
            e = safe_unit(cross(n, q - p))
            e = jnp.where(dot(r - p, e) > 0, -e, e)
            outside.append(dot(rel - p, e))
        gain = jnp.max(jnp.stack(outside), axis=0)
        d = jnp.argmax(jnp.where(valid, gain - pen, -jnp.inf))
        out.append(d)
        ok.append(ok[1] & (gain[d] > tol))
    out = jnp.stack(out)
    return out, jnp.stack(ok) & valid[out]


def _subsample(poly: Polytope, f: Array, start: Array | None = None) -> tuple[Array, Array]:
    """``P_CLIP`` vertex indices of face ``f``'s polygon (evenly spaced when it has more, from
    the polygon position of vertex ``start`` when given) and how many are real."""
    count, row = poly.count[f], poly.polygon[f]
    k = jnp.arange(P_CLIP)
    first = 0 if start is None else jnp.argmax(row == start)
    idx = jnp.where(count <= P_CLIP, jnp.minimum(k, row.shape[0] - 1), (first + (k * count) // P_CLIP) % count)
    return row[idx], jnp.minimum(count, P_CLIP)


def _clip_pass(pts: Array, count: Array, a: Array, side: Array) -> tuple[Array, Array]:
    """One Sutherland–Hodgman pass: the cyclic polygon ``pts[:count]`` cut to
    ``side·(x − a) ≥ 0`` (``side = 0``: kept whole), in the same buffer size."""
    q_size = pts.shape[0]
    k = jnp.arange(q_size)
    valid = k < count
    k1 = jnp.where(k + 1 >= count, 0, k + 1)
    dp = -dot(pts - a, side)
    dq = dp[k1]
    keep = valid & (dp <= 0)
    crosses = valid & (((dp < 0) & (dq > 0)) | ((dp > 0) & (dq < 0)))
    t = dp / jnp.where(crosses, dp - dq, 1.0)
    inter = pts + t[:, None] * (pts[k1] - pts)
    cand = jnp.stack([pts, inter], axis=1).reshape(2 * q_size, 3)
    emit = jnp.stack([keep, crosses], axis=1).reshape(2 * q_size)
    slot = jnp.cumsum(emit) - 1
    select = (emit[:, None] & (slot[:, None] == k[None, :])).astype(pts.dtype)
    return contract("...qm,...qd->...md", select, cand), jnp.minimum(jnp.sum(emit), q_size).astype(count.dtype)


class _Clip:
    """The incident polygon clipped to reference face ``fr`` of core ``ref`` (module docstring):
    ``points (2 P_CLIP, 3)``, ``valid``, ``height`` above the reference plane, and the witness
    weights of each point on both cores."""

    def __init__(self, ref: Polytope, inc: Polytope, fr: Array):
        dt = ref.vertices.dtype
        m, o = ref.normal[fr], ref.offset[fr]
        j = jnp.argmin(along(inc.vertices, m))
        if inc.normal.shape[0]:
            live = jnp.arange(inc.polygon.shape[1])[None, :] < inc.count[:, None]
            holds = jnp.any((inc.polygon == j) & live, axis=1) & inc.face_valid
            fi = jnp.argmin(jnp.where(holds, dot(inc.normal, m), jnp.inf))
            idx_inc, n_inc = _subsample(inc, fi, j)
            self.tri_inc = anchor(inc, fi)
        else:
            k = inc.vertices.shape[0]
            idx_inc, n_inc = jnp.minimum(jnp.arange(P_CLIP), k - 1), jnp.asarray(k)
            self.tri_inc = jnp.array([0, k - 1, k - 1], jnp.int32)
        idx_ref, n_ref = _subsample(ref, fr)
        ref_pts = ref.vertices[idx_ref]
        pts = jnp.zeros((2 * P_CLIP, 3), dt).at[:P_CLIP].set(inc.vertices[idx_inc])
        count = n_inc.astype(jnp.int32)
        for k in range(P_CLIP):
            a, b = ref_pts[k], ref_pts[jnp.where(k + 1 >= n_ref, 0, k + 1)]
            pts, count = _clip_pass(pts, count, a, jnp.where(k < n_ref, cross(m, b - a), 0.0))
        self.points, self.valid = pts, jnp.arange(2 * P_CLIP) < count
        self.height = dot(pts, m) - o
        self.tri_ref = anchor(ref, fr)
        if inc.normal.shape[0]:
            self.w_inc = affine(pts, *inc.vertices[self.tri_inc])
        else:                                      # a point or a segment: its own parameter
            a, e = inc.vertices[0], inc.vertices[-1] - inc.vertices[0]
            t = jnp.clip(dot(pts - a, e) / jnp.maximum(dot(e, e), jnp.finfo(dt).tiny), 0.0, 1.0)
            self.w_inc = jnp.stack([1 - t, t, 0 * t], axis=-1)
        self.w_ref = affine(pts - self.height[:, None] * m, *ref.vertices[self.tri_ref])

    def witness(self, k: Array, ref_is_1) -> Witness:
        """The witness of clipped points ``k`` (core 1 first; ``ref_is_1`` may be traced)."""
        ref = (jnp.broadcast_to(self.tri_ref, k.shape + (3,)).astype(jnp.int32), self.w_ref[k])
        inc = (jnp.broadcast_to(self.tri_inc, k.shape + (3,)).astype(jnp.int32), self.w_inc[k])
        return Witness(*(jnp.where(ref_is_1, a, b) for a, b in zip(ref + inc, inc + ref)))


def _face_side(kind: Array) -> Array:
    """The core whose face the search's witness lies on: 1, 2, or 0 (GJK, crossing edges)."""
    return jnp.where(kind == FACE1, 1, jnp.where(kind == FACE2, 2, 0)).astype(jnp.int32)


def manifold(p1: Polytope, p2: Polytope, res: Search, slots: int) -> tuple[Array, Witness, Array, Array]:
    """Per slot: frozen normal ``(S, 3)``, :class:`~sodyn.collision.hull_distance.Witness` (leading
    axis ``S``), validity, and the core whose face holds the witness (``(S,)``: 1, 2 or 0, module
    docstring), from the search result ``res`` (module docstring).  Two cores of
    the same shapes (two meshes of one model) share one clipping, their roles chosen by the
    winner; otherwise each core with faces gets its own."""
    n = res.normal
    dt = n.dtype
    scale = jnp.max(jnp.abs(p1.vertices - p1.vertices[0])) + jnp.max(jnp.abs(p2.vertices - p2.vertices[0]))
    tol = DUPLICATE * scale
    side0 = _face_side(res.kind)
    out = (jax.tree.map(lambda x: jnp.broadcast_to(x, (slots,) + x.shape), res.witness), jnp.arange(slots) == 0,
           jnp.zeros(slots, jnp.int32).at[0].set(side0))
    is1 = res.kind == FACE1
    if jax.tree.map(jnp.shape, p1) == jax.tree.map(jnp.shape, p2):
        options = [(is1, jax.tree.map(lambda a, b: jnp.where(is1, a, b), p1, p2),
                    jax.tree.map(lambda a, b: jnp.where(is1, b, a), p1, p2), is1 | (res.kind == FACE2))]
    else:
        options = [(r1, ref, inc, res.kind == kind) for r1, ref, inc, kind in ((True, p1, p2, FACE1),
                                                                                (False, p2, p1, FACE2))
                   if ref.normal.shape[0]]
    for ref_is_1, ref, inc, use in options:
        c = _Clip(ref, inc, jnp.clip(res.face, 0, ref.normal.shape[0] - 1))
        k0 = jnp.argmin(jnp.where(c.valid, c.height, jnp.inf))
        use0 = c.valid[k0] & (c.height[k0] <= res.gap + 1e3 * jnp.finfo(dt).eps * scale)
        w0 = jax.tree.map(lambda a, b, u=use0: jnp.where(u, a, b[None]), c.witness(k0[None], ref_is_1), res.witness)
        x1, x2 = jax.tree.map(lambda x: x[0], w0).points(p1.vertices, p2.vertices)
        h0 = jnp.where(use0, c.height[k0], res.gap)
        idx, ok = spread(c.points, c.height, c.valid, n, 0.5 * (x1 + x2), h0, slots - 1, tol)
        wit = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), w0, c.witness(idx, ref_is_1))
        ref = jnp.where(ref_is_1, 1, 2).astype(jnp.int32)
        side = jnp.full(slots, ref, jnp.int32).at[0].set(jnp.where(use0, ref, side0))
        mine = (wit, jnp.concatenate([jnp.ones((1,), bool), ok]), side)
        out = jax.tree.map(lambda a, b, u=use: jnp.where(u, a, b), mine, out)
    return jnp.broadcast_to(n, (slots, 3)), *out


def _face_normal(v: Array, tri: Array, n: Array) -> Array:
    """The unit normal of the triangles ``v[tri]`` (``tri (S, 3)``), differentiable in ``v``,
    oriented as the frozen ``n (S, 3)``."""
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    m = safe_unit(cross(b - a, c - a))
    return jnp.where(jax.lax.stop_gradient(dot(m, n))[:, None] < 0, -m, m)


def _evaluate(v1: Array, v2: Array, r1: Array, r2: Array, normal: Array, wit: Witness, valid: Array,
              side: Array) -> Contacts:
    """Distances, positions and normals of the slots from the differentiable core vertices
    (module docstring; ``side (S,)``: the core whose face holds each slot's witness, 0 for
    none); unused slots at ``FAR``."""
    x1 = contract("...k,...kd->...d", wit.w1, v1[wit.i1])
    x2 = contract("...k,...kd->...d", wit.w2, v2[wit.i2])
    d = dot(normal, x2 - x1) - r1 - r2
    m1, m2 = _face_normal(v1, wit.i1, normal), _face_normal(v2, wit.i2, normal)
    on1, on2 = (side == 1)[:, None], (side == 2)[:, None]
    pos = jnp.where(on1, x2 - (0.5 * d + r2)[:, None] * m1,
                    jnp.where(on2, x1 + (0.5 * d + r1)[:, None] * m2, 0.5 * (x1 + x2) + (0.5 * (r1 - r2)) * normal))
    normal = jnp.where(on1, m1, jnp.where(on2, m2, normal))
    return Contacts(jnp.where(valid, d, FAR), jnp.where(valid[:, None], pos, pos[0]), normal)


def polytope_pair(type1: str, type2: str, slots: int) -> Callable[[GeomFrame, MeshFrame], Contacts]:
    """The narrow phase ``f(g1, g2) -> Contacts`` (``slots`` slots) of a geom of polytope-core type
    ``type1`` and a mesh (or two meshes), module docstring."""

    def pair(g1, g2) -> Contacts:
        v1, v2 = core_vertices(type1, g1), core_vertices(type2, g2)
        f1, f2 = jax.lax.stop_gradient((g1, g2))
        p1, p2 = core_polytope(type1, f1), core_polytope(type2, f2)
        res = search(p1, p2, f1.position, f2.position)
        if slots == 1:
            normal, wit, valid = res.normal[None], jax.tree.map(lambda x: x[None], res.witness), jnp.ones((1,), bool)
            side = _face_side(res.kind)[None]
        else:
            normal, wit, valid, side = manifold(p1, p2, res, slots)
        normal, wit = jax.lax.stop_gradient((normal, wit))
        return _evaluate(v1, v2, _radius(type1, g1), _radius(type2, g2), normal, wit, valid, side)

    pair.__name__ = f"{type1}_{type2}"
    pair.__doc__ = f"Contacts of a {type1} ``g1`` and a mesh ``g2``, {slots} slots (:func:`polytope_pair`)."
    return pair


def deepest_indices(h: Array, count: int, first: list[Array] | None = None, valid: Array | None = None) -> Array:
    """Indices ``(count,)`` of the smallest ``h`` (``first`` given ones, then the smallest valid
    others in order), by argmin passes (cheaper than a sort under ``vmap`` on CPU)."""
    index = jnp.arange(h.shape[0])
    rest = h if valid is None else jnp.where(valid, h, jnp.inf)
    out = list(first or [])
    for k in out:
        rest = jnp.where(index == k, jnp.inf, rest)
    while len(out) < count:
        out.append(jnp.argmin(rest))
        rest = jnp.where(index == out[-1], jnp.inf, rest)
    return jnp.stack(out)


def diagonal_extremes(x: Array, candidate: Array, n: Array, rotation: Array) -> Array:
    """Indices ``(4,)`` of the points of ``x (Q, 3)`` under mask ``candidate`` extreme along the
    diagonals ``±t₁ ± t₂`` of a geom's axes ``rotation`` projected into the plane ``⊥ n``
    (module docstring; elementwise, no small matmuls under ``vmap``)."""
    cx, cy = rotation[:, 0], rotation[:, 1]
    x_axis, y_axis = cx - dot(cx, n) * n, cy - dot(cy, n) * n
    t1 = safe_unit(jnp.where(dot(x_axis, x_axis) >= 0.5, x_axis, y_axis))
    a1, a2 = dot(x, t1), dot(x, cross(n, t1))
    diagonals = jnp.stack([a1 + a2, a1 - a2, -a1 - a2, a2 - a1])
    return jnp.argmax(jnp.where(candidate[None], diagonals, -jnp.inf), axis=1)


def distinct(x: Array, ok: Array, tol: Array) -> Array:
    """``ok`` of each point of ``x (k, 3)`` that is also farther than ``tol`` from every earlier
    point with ``ok`` (a repeat is left unused); one ``k × k`` comparison, no unrolled loop."""
    gap2 = jnp.sum((x[:, None] - x[None]) ** 2, axis=-1)
    earlier = jnp.tril(jnp.ones((x.shape[0], x.shape[0]), bool), -1)
    return ok & ~jnp.any(earlier & ok[None, :] & (gap2 <= tol * tol), axis=1)


def plane_mesh(g1: GeomFrame, g2: MeshFrame) -> Contacts:
    """Plane–mesh, 8 slots: the four deepest hull vertices and the candidates' extremes along
    four diagonals of the mesh's axes in the plane (module docstring); distance ``n·(v − p₁)``,
    position ``v − (d/2) n``."""
    n = g1.rotation[:, 2]
    v = core_vertices("mesh", g2)
    vs, ns, ps, rs = jax.lax.stop_gradient((v, n, g1.position, g2.rotation))
    h = dot(vs - ps, ns)
    deepest = deepest_indices(h, DEEPEST)
    candidate = h <= jnp.maximum(h[deepest[0]] + SKIN, 0.0)
    k = jnp.concatenate([deepest, diagonal_extremes(vs, candidate, ns, rs)])
    valid = distinct(vs[k], jnp.ones(k.shape, bool), DUPLICATE * g2.size[0])
    d = dot(v[k] - g1.position, n)
    pos = v[k] - 0.5 * d[:, None] * n
    return Contacts(jnp.where(valid, d, FAR), jnp.where(valid[:, None], pos, pos[0]), jnp.broadcast_to(n, pos.shape))


#: The pair functions, keyed by geom type names (the mesh second).
HULL_PAIRS: dict[tuple[str, str], Callable] = {
    ("plane", "mesh"): plane_mesh,
    ("sphere", "mesh"): polytope_pair("sphere", "mesh", 1),
    ("capsule", "mesh"): polytope_pair("capsule", "mesh", 2),
    ("box", "mesh"): polytope_pair("box", "mesh", 4),
    ("mesh", "mesh"): polytope_pair("mesh", "mesh", 4),
}
#: Contact slots per pair type.
SLOTS: dict[tuple[str, str], int] = {("plane", "mesh"): 8, ("sphere", "mesh"): 1, ("capsule", "mesh"): 2,
                                     ("box", "mesh"): 4, ("mesh", "mesh"): 4}

__all__ = ["DEEPEST", "DUPLICATE", "HULL_PAIRS", "P_CLIP", "SKIN", "SLOTS", "SPREAD_WEIGHT", "deepest_indices",
           "diagonal_extremes", "distinct", "manifold", "plane_mesh", "polytope_pair", "spread"]
