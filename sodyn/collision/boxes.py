"""Closed-form narrow phase for the pairs with a box: plane–box, sphere–box and capsule–box
(MuJoCo's ``mjc_PlaneBox``, ``mjc_SphereBox``, ``mjc_CapsuleBox``; box–box is in
:mod:`sodyn.collision.box_box`).

Same interface as :mod:`sodyn.collision.primitives` (which re-exports these functions in its
dispatch table): ``f(g1, g2) -> Contacts`` for one pair, a fixed number of slots, normal from
``g1`` to ``g2``, position midway between the surfaces, signed distance, unused slots at
``distance = FAR``.  Slots are not filtered by a margin: every candidate point carries its own
signed distance and the force law decides.  This module also holds the few helpers that
:mod:`sodyn.collision.primitives` builds on (it imports this one, not the reverse).

Every branch is a ``jnp.where`` over quantities computed for all cases, with each division
by a quantity that can vanish guarded twice (``x / where(x == 0, 1, x)`` and the selection),
so values and gradients stay finite at every pose, including the degenerate ones."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from sodyn.collision.types import FAR, Contacts, GeomFrame
from sodyn.contraction import contract
from sodyn.spatial import dot, mtv, mv

#: MuJoCo's ``mjMINVAL``: lengths below it count as zero (directions fall back).
MINVAL = 1e-15


def unit(v: Array, fallback: Array) -> tuple[Array, Array]:
    """``(v / |v|, |v|)``, with ``fallback`` for the direction where ``|v| < MINVAL`` (and the
    length then 0, its gradient zero rather than NaN)."""
    sq = dot(v, v)
    ok = sq >= MINVAL * MINVAL
    norm = jnp.sqrt(jnp.where(ok, sq, 1.0))
    return jnp.where(ok[..., None], v / norm[..., None], fallback), jnp.where(ok, norm, 0.0)


def safe_div(a: Array, b: Array) -> Array:
    """``a / b`` where ``b != 0``, else ``0`` (double ``where``: finite gradients)."""
    nz = b != 0
    return jnp.where(nz, a / jnp.where(nz, b, 1.0), 0.0)


def pack(distance: list[Array], position: list[Array], normal: list[Array]) -> Contacts:
    """Stack per-slot scalars and 3-vectors into :class:`Contacts` (slots on the first axis)."""
    return Contacts(jnp.stack(distance), jnp.stack(position), jnp.stack(normal))


def onehot(index: Array, n: int, dtype) -> Array:
    """``e_index`` in ``R^n`` (a traced index picks a component by a product, not a gather)."""
    return (jnp.arange(n) == index).astype(dtype)


# ---------------------------------------------------------------------------
# plane–box
# ---------------------------------------------------------------------------


def plane_box(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Plane–box, 4 slots: the 4 box corners below the box centre (relative to the plane).

    With plane normal ``n`` and box corners ``p₂ + R₂ (±a, ±b, ±c)``, corner ``k`` lies at
    ``dist + l_k`` from the plane, ``dist = n·(p₂ − p₁)``, ``l_k = n·R₂ c_k``.  Corners come
    in antipodal pairs ``±c_k`` (``l`` of opposite signs), so the four with ``l ≤ 0`` (the
    corners MuJoCo tests) are the four deepest: taking the lower of each of the four pairs
    ``c_k = (±a, ±b, c)`` is a static top-4.  A box resting on a face gets its 4 face corners
    at distance 0; MuJoCo returns the same corners, filtered by its margin.  The plane is
    infinite (its size is ignored)."""
    n = g1.rotation[:, 2]
    dist = dot(g2.position - g1.position, n)
    signs = jnp.array([[-1.0, -1.0, 1.0], [1.0, -1.0, 1.0], [-1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], g2.size.dtype)
    corners = mv(g2.rotation, signs * g2.size)  # (4, 3) world offsets from the box centre
    lk = dot(corners, n)
    flip = jnp.where(lk > 0, -1.0, 1.0)
    corners = flip[:, None] * corners
    d = dist + flip * lk
    pos = g2.position + corners - (0.5 * d)[:, None] * n
    return Contacts(d, pos, jnp.broadcast_to(n, pos.shape))


# ---------------------------------------------------------------------------
# sphere–box
# ---------------------------------------------------------------------------


def sphere_box_local(c: Array, r: Array, b: Array) -> tuple[Array, Array, Array]:
    """A sphere (centre ``c``, radius ``r``) against the box ``|x_i| ≤ b_i``, in box axes:
    ``(distance, position, normal)``, normal from the sphere to the box.

    Outside: ``q = clamp(c, −b, b)``, normal ``(q − c)/|q − c|``, distance ``|q − c| − r``,
    position midway between ``q`` and the sphere's deepest point ``c + r n``.  Centre inside
    (``|q − c| ≤ MINVAL``): the face of least depth ``min_i(b_i ∓ c_i)`` (first in the order
    −x, +x, −y, +y, −z, +z), normal into the box through that face, distance ``−depth − r``."""
    q = jnp.where(b > 0, jnp.clip(c, -b, b), c)  # MuJoCo clamps only the axes of positive size
    fallback = jnp.zeros_like(c)
    n_out, dist = unit(q - c, fallback)
    inside = dist <= MINVAL
    d_out = dist - r
    pos_out = 0.5 * (q + c + r * n_out)

    depth = jnp.stack([b + c, b - c], axis=-1).reshape(6)  # faces −x, +x, −y, +y, −z, +z
    k = jnp.argmin(depth)
    pick = onehot(k, 6, c.dtype)
    closest = dot(pick, depth)
    n_in = contract("...k,...ki->...i", pick, jnp.array([[1.0, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0],
                                                         [0, 0, 1], [0, 0, -1]], c.dtype))
    pos_in = c + (0.5 * (r - closest)) * n_in
    d_in = -closest - r
    return (jnp.where(inside, d_in, d_out), jnp.where(inside, pos_in, pos_out),
            jnp.where(inside, n_in, n_out))


def _sphere_box_world(c_local: Array, r: Array, box: GeomFrame) -> tuple[Array, Array, Array]:
    d, pos, n = sphere_box_local(c_local, r, box.size)
    return d, mv(box.rotation, pos) + box.position, mv(box.rotation, n)


def sphere_box(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Sphere–box, 1 slot: the sphere centre in box axes against the box
    (:func:`sphere_box_local`)."""
    d, pos, n = _sphere_box_world(mtv(g2.rotation, g1.position - g2.position), g1.size[0], g2)
    return pack([d], [pos], [n])


# ---------------------------------------------------------------------------
# capsule–box
# ---------------------------------------------------------------------------

# the 12 box edges as MuJoCo enumerates them: axis j, then the corners i (bit j clear)
_EDGES = [(j, i) for j in range(3) for i in range(8) if not i & (1 << j)]


def _segment_edges(pos: Array, ha: Array, h: Array, b: Array) -> tuple[Array, ...]:
    """Closest points between the capsule segment ``pos + x₂ ha`` (``x₂ ∈ [−1, 1]``) and each
    box edge ``m + x₁ b_j e_j`` (midpoint ``m``): the 2×2 normal equations
    ``[[ma, mb], [mb, mc]] (x₁, x₂) = (u, v)`` solved, then clamped (clamp ``x₁``, re-solve
    ``x₂``; clamp ``x₂``, re-solve and clamp ``x₁``).  Returns, per edge, the squared gap,
    ``x₁``, ``x₂``, the clamp code ``3 s₁ + s₂`` (``s = 0, 1, 2``: lower end, interior, upper
    end), and whether the edge is usable (``det ≥ MINVAL``)."""
    dt = pos.dtype
    js = jnp.array([e[0] for e in _EDGES])
    corner_sign = jnp.array([[1.0 if i & (1 << k) else -1.0 for k in range(3)] for _, i in _EDGES], dt)
    ej = (js[:, None] == jnp.arange(3)[None, :]).astype(dt)  # (12, 3)
    mid = corner_sign * b * (1 - ej)
    bj = dot(ej, b)
    haj = dot(ej, ha)
    dif = mid - pos
    ma = bj * bj
    mb = -bj * haj
    mc = h * h
    u = -bj * dot(ej, dif)
    v = dot(dif, ha)
    det = ma * mc - mb * mb
    ok = jnp.abs(det) >= MINVAL
    x1 = safe_div(mc * u - mb * v, det)
    x2 = safe_div(ma * v - mb * u, det)
    one = jnp.ones_like(x1)
    s1 = one
    hi1, lo1 = x1 > 1, x1 < -1
    x2 = jnp.where(hi1, safe_div(v - mb, mc), jnp.where(lo1, safe_div(v + mb, mc), x2))
    s1 = jnp.where(hi1, 2.0, jnp.where(lo1, 0.0, s1))
    x1 = jnp.clip(x1, -1.0, 1.0)
    hi2, lo2 = x2 > 1, x2 < -1
    x1r = jnp.where(hi2, safe_div(u - mb, ma), safe_div(u + mb, ma))
    s1 = jnp.where(hi2 | lo2, jnp.where(x1r > 1, 2.0, jnp.where(x1r < -1, 0.0, s1)), s1)
    x1 = jnp.where(hi2 | lo2, jnp.clip(x1r, -1.0, 1.0), x1)
    s2 = jnp.where(hi2, 2.0, jnp.where(lo2, 0.0, one))
    x2 = jnp.clip(x2, -1.0, 1.0)
    gap = dif - x2[:, None] * ha + (bj * x1)[:, None] * ej
    return dot(gap, gap), x1, x2, (3 * s1 + s2).astype(jnp.int32), ok


def _second_point(axis: Array, ha: Array, b: Array, pos: Array, best: Array, boxpos: Array, cltype: Array,
                  clface: Array, clcorner: Array, cledge: Array, axisdir: Array) -> tuple[Array, Array]:
    """MuJoCo's second capsule point (segment parameter offset from the first, and whether
    there is one): walk from the first point along the capsule, over the box, as far as the
    box extends (the cases by where the first point touches the box: a corner, the middle of
    an edge, or a face)."""
    dt = axis.dtype
    big = jnp.asarray(4.0, dt)  # beyond any segment-parameter offset (which lies in [−2, 2])
    aha = jnp.abs(ha)

    def reach(k, length):  # length / |ha_k|, "infinite" where the capsule is parallel to face k
        hk = dot(onehot(k, 3, dt), aha)
        return jnp.where(hk > 0, safe_div(length, hk), big)

    def at(vec, k):
        return dot(onehot(k, 3, dt), vec)

    # first point closest to a box corner
    c = jnp.bitwise_xor(axisdir, clcorner)
    single = (c == 1) | (c == 2) | (c == 4)
    mul_c = jnp.where(single, 1.0, -1.0)
    cc = jnp.where(single, c, 7 - c)
    ax = jnp.where(cc == 1, 0, jnp.where(cc == 2, 1, 2))
    de = jnp.where(single, 1 - best, 1 + best)
    dp = jnp.where(single, 1 + best, 1 - best)
    along = at(axis, ax) ** 2 > 0.5
    sp_along = jnp.minimum(de, reach(ax, 2 * at(b, ax))) * mul_c
    sp_face = -mul_c * jnp.minimum(jnp.minimum(dp, reach((ax + 1) % 3, 2 * at(b, (ax + 1) % 3))),
                                   reach((ax + 2) % 3, 2 * at(b, (ax + 2) % 3)))
    sp_corner = jnp.where(along, sp_along, sp_face)
    has_corner = (c != 0) & (c != 7)

    # first point in the middle of a box edge
    ce = jnp.bitwise_and(jnp.bitwise_xor(axisdir, clcorner), 7 - jnp.left_shift(1, cledge))
    has_edge = (ce == 1) | (ce == 2) | (ce == 4)
    e_ax = cledge
    a1, a2 = (e_ax + 1) % 3, (e_ax + 2) % 3
    a1 = jnp.where(jnp.abs(at(axis, a1)) > jnp.abs(at(axis, a2)), a2, a1)
    a2 = 3 - e_ax - a1
    up = jnp.bitwise_and(ce, jnp.left_shift(1, a2)) != 0
    mul_e = jnp.where(up, 1.0, -1.0)
    sp_edge = jnp.minimum(jnp.where(up, 1 - best, 1 + best), reach(a2, 2 * at(b, a2)))
    same = (jnp.bitwise_and(axisdir, jnp.left_shift(1, e_ax)) != 0) == up
    sp_edge = jnp.minimum(sp_edge, reach(e_ax, at(b, e_ax) * jnp.where(same, 1 - boxpos, 1 + boxpos))) * mul_e

    # first point at an end of the capsule, nearest a face of the box
    mul_f = jnp.where(cltype == -3, 1.0, -1.0)
    end = pos - mul_f * ha
    sp_f = jnp.asarray(2.0, dt)
    for k in range(3):
        for bound in (b[k], -b[k]):
            e1 = safe_div(bound - end[k], ha[k]) * mul_f
            take = (k != clface) & (ha[k] != 0) & (e1 > 0) & (e1 < sp_f)
            sp_f = jnp.where(take, e1, sp_f)
    sp_f = sp_f * mul_f
    has_face = clface != -1

    is_face = cltype < 0
    is_edge = (cltype >= 0) & (cltype // 3 == 1)
    sp = jnp.where(is_face, sp_f, jnp.where(is_edge, sp_edge, sp_corner))
    has = jnp.where(is_face, has_face, jnp.where(is_edge, has_edge, has_corner)) & (cltype != -4)
    return sp, has


def capsule_box(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Capsule–box, 2 slots: MuJoCo's ``mjc_CapsuleBox``, two sphere–box contacts at points of
    the capsule segment (:func:`sphere_box_local`).

    In box axes, the segment is ``pos + x ha`` (``ha`` the half-axis, ``x ∈ [−1, 1]``).  The
    first point is the segment point nearest the box among: each end whose nearest box point
    lies on a face (clamped in at most one coordinate; ties to ``x = −1``), and the nearest
    points between the segment and each of the 12 edges (:func:`_segment_edges`), candidates
    taken in MuJoCo's order with its strict improvements.  The second point (MuJoCo's
    heuristic, :func:`_second_point`) lies further along the segment, at most as far as the
    box extends beyond the first; it is absent (slot at ``FAR``) where the segment points at
    or away from the nearest corner, crosses an edge at right angles, or has an end inside
    the box, and for a zero-length capsule.

    The first point is exact while the segment is outside the box; when the segment crosses
    the box, MuJoCo's choice (and so this one) is a heuristic, not the deepest point.
    Deviation: where no candidate qualifies (only a zero-length capsule whose centre is in an
    edge or corner region), MuJoCo reports nothing; here the first point is the centre."""
    dt = g2.size.dtype
    r, h, b = g1.size[0], g1.size[1], g2.size
    pos = mtv(g2.rotation, g1.position - g2.position)
    axis = mtv(g2.rotation, g1.rotation[:, 2])
    ha = axis * h
    axisdir = jnp.sum(jnp.where(ha > 0, jnp.array([1, 2, 4]), 0))

    # the ends: candidate if clamped into the box in at most one coordinate
    best_d = jnp.asarray(jnp.finfo(dt).max, dt)
    best, boxpos = jnp.zeros((), dt), jnp.zeros((), dt)
    cltype, clface, clcorner, cledge = (jnp.asarray(v, jnp.int32) for v in (-4, -1, 0, 0))
    for i in (-1, 1):
        e = pos + i * ha
        out = (e < -b) | (e > b)
        q = jnp.clip(e, -b, b)
        d2 = dot(q - e, q - e)
        take = (jnp.sum(out) <= 1) & (d2 < best_d)
        face = jnp.where(jnp.any(out), jnp.argmax(out), -1)
        best_d = jnp.where(take, d2, best_d)
        best = jnp.where(take, float(i), best)
        cltype = jnp.where(take, -2 + i, cltype)
        clface = jnp.where(take, face, clface)

    # the edges, in order, each replacing the best only by more than MINVAL
    gap2, x1, x2, code, ok = _segment_edges(pos, ha, h, b)
    for k, (j, i) in enumerate(_EDGES):
        take = ok[k] & (gap2[k] < best_d - MINVAL)
        best_d = jnp.where(take, gap2[k], best_d)
        best = jnp.where(take, x2[k], best)
        boxpos = jnp.where(take, x1[k], boxpos)
        clcorner = jnp.where(take, i + (1 << j) * (code[k] // 6), clcorner)
        cledge = jnp.where(take, j, cledge)
        cltype = jnp.where(take, code[k], cltype)

    sp, has2 = _second_point(axis, ha, b, pos, best, boxpos, cltype, clface, clcorner, cledge, axisdir)
    has2 = has2 & (h > 0)
    d1, pos1, n1 = _sphere_box_world(pos + best * ha, r, g2)
    d2, pos2, n2 = _sphere_box_world(pos + (best + jnp.where(has2, sp, 0.0)) * ha, r, g2)
    return pack([d1, jnp.where(has2, d2, FAR)], [pos1, jnp.where(has2, pos2, pos1)],
                [n1, jnp.where(has2, n2, n1)])


__all__ = ["MINVAL", "capsule_box", "onehot", "pack", "plane_box", "safe_div", "sphere_box", "sphere_box_local", "unit"]
