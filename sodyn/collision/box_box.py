"""Box–box contact (MuJoCo's ``mjc_BoxBox``): the separating-axis test over the 15 axes for the
deepest normal and distance, then the incident face clipped against the reference face
(Sutherland–Hodgman) for face contacts, up to 8 slots, or one point for an edge–edge contact.

Same interface and conventions as :mod:`sodyn.collision.boxes`, whose helpers it uses."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from sodyn.collision.boxes import MINVAL, onehot, safe_div, unit
from sodyn.collision.types import FAR, Contacts, GeomFrame
from sodyn.contraction import contract
from sodyn.spatial import cross, dot, mtm, mtv, mv, transpose


def _tol(dtype) -> dict[str, float]:
    """MuJoCo's rounding scales for box–box (double or ``mjUSESINGLE`` values by precision)."""
    if jnp.finfo(dtype).bits >= 64:
        return {"par": 1e-16, "sgn": 1e-9, "dup": 1e-14}
    return {"par": 1e-7, "sgn": 1e-5, "dup": 1e-10}


def _clip(poly: Array, count: Array, coord: int, sign: float, limit: Array, size: int) -> tuple[Array, Array]:
    """One Sutherland–Hodgman pass: the polygon ``poly[:count]`` (cyclic, ``(x, y, z)`` with
    ``z`` carried as an attribute) clipped to ``sign·v[coord] ≤ limit``, as ``(size, 3)``
    vertices and their count.  Vertex ``k`` is kept if inside, followed by the crossing point
    of edge ``(k, k+1)`` if that edge strictly crosses the line; output slots are assigned by a
    running count (a one-hot contraction rather than a scatter)."""
    n = poly.shape[0]
    k = jnp.arange(n)
    valid = k < count
    k1 = jnp.where(k + 1 >= count, 0, k + 1)
    q = poly[k1]
    dp = sign * poly[:, coord] - limit
    dq = dp[k1]
    keep = valid & (dp <= 0)
    crosses = valid & (((dp < 0) & (dq > 0)) | ((dp > 0) & (dq < 0)))
    t = safe_div(dp, jnp.where(crosses, dp - dq, 0.0))
    inter = poly + t[:, None] * (q - poly)
    cand = jnp.stack([poly, inter], axis=1).reshape(2 * n, 3)
    emit = jnp.stack([keep, crosses], axis=1).reshape(2 * n)
    slot = jnp.cumsum(emit) - 1
    select = (emit[:, None] & (slot[:, None] == jnp.arange(size)[None, :])).astype(poly.dtype)
    return contract("...cm,...cd->...md", select, cand), jnp.minimum(jnp.sum(emit), size)


def _perm(a: Array, dtype) -> Array:
    """Rows ``e_{a+1}, e_{a+2}, e_a`` (indices mod 3): ``P v = (v_x, v_y, v_z)`` in the frame of
    reference face ``a`` (in-face axes first, face axis last)."""
    return jnp.stack([onehot((a + 1) % 3, 3, dtype), onehot((a + 2) % 3, 3, dtype), onehot(a, 3, dtype)])


def _face_contacts(g1: GeomFrame, g2: GeomFrame, rot: Array, pos21: Array, pos12: Array, code: Array,
                   dup_eps: float) -> tuple[Array, Array, Array]:
    """Face contact for face ``code`` (0–2: of box 1, 3–5: of box 2): the incident face (the
    other box's face most opposed to the reference normal) clipped to the reference face's
    side planes (4 passes of :func:`_clip`); each clipped vertex is a contact at depth ``z``
    (its height above the reference face plane), positioned midway, normal along the face axis
    (8 slots; near-duplicate vertices, within ``√dup_eps`` of the face scale, dropped)."""
    dt = rot.dtype
    ref1 = code < 3
    a = jnp.where(ref1, code, code - 3)
    s_ref = jnp.where(ref1, g1.size, g2.size)
    s_inc = jnp.where(ref1, g2.size, g1.size)
    r_ref = jnp.where(ref1, g1.rotation, g2.rotation)
    p_ref = jnp.where(ref1, g1.position, g2.position)
    p_inc = jnp.where(ref1, pos21, pos12)  # incident centre in reference axes
    r_inc = jnp.where(ref1, rot, transpose(rot))  # incident axes (columns) in reference axes
    ea = onehot(a, 3, dt)
    sgn = jnp.where(dot(p_inc, ea) >= 0, 1.0, -1.0)
    normal_row = contract("...i,...ij->...j", ea, r_inc)  # reference-normal components of the incident axes
    bi = jnp.argmax(jnp.abs(normal_row))
    t_inc = jnp.where(sgn * dot(normal_row, onehot(bi, 3, dt)) > 0, -1.0, 1.0)
    perm = _perm(a, dt)
    p = mv(perm, p_inc + t_inc * mv(r_inc, s_inc * onehot(bi, 3, dt)))
    du = mv(perm, mv(r_inc, s_inc * onehot((bi + 1) % 3, 3, dt)))
    dv = mv(perm, mv(r_inc, s_inc * onehot((bi + 2) % 3, 3, dt)))
    zsign = jnp.array([1.0, 1.0, 0.0], dt) + jnp.array([0.0, 0.0, 1.0], dt) * sgn
    s_perm = mv(perm, s_ref)
    p = p * zsign - jnp.array([0.0, 0.0, 1.0], dt) * s_perm[2]
    du, dv = du * zsign, dv * zsign
    su = jnp.array([1.0, -1.0, -1.0, 1.0], dt)
    sv = jnp.array([1.0, 1.0, -1.0, -1.0], dt)
    poly = p + su[:, None] * du + sv[:, None] * dv
    count = jnp.asarray(4)
    for size, (coord, sign) in zip((5, 6, 7, 8), ((0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0))):
        poly, count = _clip(poly, count, coord, sign, s_perm[coord], size)

    valid = jnp.arange(8) < count
    dxy = poly[:, None, :2] - poly[None, :, :2]
    close = jnp.sum(dxy * dxy, axis=-1) < dup_eps * (s_perm[0] ** 2 + s_perm[1] ** 2)
    earlier = jnp.arange(8)[None, :] < jnp.arange(8)[:, None]
    dup = jnp.any(close & earlier & valid[None, :], axis=1)
    use = valid & ~dup
    z = poly[:, 2]
    local = jnp.stack([poly[:, 0], poly[:, 1], sgn * (s_perm[2] + 0.5 * z)], axis=-1)
    pos = mv(r_ref, mtv(perm, local)) + p_ref
    normal = jnp.where(ref1, sgn, -sgn) * mv(r_ref, ea)
    return jnp.where(use, z, FAR), jnp.where(use[:, None], pos, pos[0]), jnp.broadcast_to(normal, pos.shape)


def _edge_contact(g1: GeomFrame, g2: GeomFrame, rot: Array, pos21: Array, code: Array,
                  sgn_eps: float) -> tuple[Array, Array, Array]:
    """Edge–edge contact for axis ``code = 6 + 3i + j`` (``e_i`` of box 1 × ``e_j`` of box 2):
    the supporting edge of each box along the axis (oriented from box 1 to box 2), their
    nearest points (clamped line–line solution; where a sign of the axis is within
    ``sgn_eps`` of zero both candidate edges are tried, the nearest pair kept); distance
    ``(w₂ − w₁)·axis``, position the midpoint."""
    dt = rot.dtype
    i, j = (code - 6) // 3, (code - 6) % 3
    ei, ej = onehot(i, 3, dt), onehot(j, 3, dt)
    d2 = mv(rot, ej)
    axis, _ = unit(cross(ei, d2), jnp.array([1.0, 0.0, 0.0], dt))
    axis = jnp.where(dot(axis, pos21) < 0, -axis, axis)
    a2 = mtv(rot, axis)

    def ambiguous(vec, k):  # one-hot of the first in-plane component within sgn_eps of 0
        first = onehot((k + 1) % 3, 3, dt) * (jnp.abs(dot(vec, onehot((k + 1) % 3, 3, dt))) < sgn_eps)
        second = onehot((k + 2) % 3, 3, dt) * (jnp.abs(dot(vec, onehot((k + 2) % 3, 3, dt))) < sgn_eps)
        return jnp.where(jnp.any(first > 0), first, second)

    amb1, amb2 = ambiguous(axis, i), ambiguous(a2, j)
    s1, s2 = g1.size, g2.size
    b = dot(d2, ei)
    denom = 1 - b * b
    hi, hj = dot(s1, ei), dot(s2, ej)
    best = None
    for v1 in (0.0, 1.0):
        for v2 in (0.0, 1.0):
            c1 = jnp.where(axis >= 0, s1, -s1) * (1 - ei) * (1 - 2 * v1 * amb1)
            cc = jnp.where(a2 >= 0, -s2, s2) * (1 - ej) * (1 - 2 * v2 * amb2)
            c2 = mv(rot, cc) + pos21
            e = c2 - c1
            d1e, d2e = dot(e, ei), dot(d2, e)
            s = jnp.where(denom < MINVAL, 0.0, safe_div(d1e - b * d2e, denom))
            s = jnp.clip(s, -hi, hi)
            t = jnp.clip(b * s - d2e, -hj, hj)
            s = jnp.clip(d1e + b * t, -hi, hi)
            w1, w2 = c1 + s * ei, c2 + t * d2
            gap2 = dot(w2 - w1, w2 - w1)
            if best is None:
                best = (gap2, w1, w2)
            else:
                take = gap2 < best[0]
                best = tuple(jnp.where(take, x, y) for x, y in zip((gap2, w1, w2), best))
    _, w1, w2 = best
    dist = dot(w2 - w1, axis)
    return dist, mv(g1.rotation, 0.5 * (w1 + w2)) + g1.position, mv(g1.rotation, axis)


def box_box(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Box–box, 8 slots: MuJoCo's ``mjc_BoxBox`` (separating axes, then face clipping or one
    edge–edge point).

    In box 1's axes (``rot = R₁ᵀR₂``, centres ``pos21``, ``pos12`` of each box in the other's
    axes), the separation along a unit axis ``n`` is ``|n·pos21| − Σ_k s1_k |n·e_k| −
    Σ_k s2_k |n·rot_k|``, for the 3 + 3 face axes and the 9 edge axes ``e_i × rot_j`` (those
    with ``|e_i × rot_j|² < ε`` skipped: nearly parallel edges, covered by the faces).  The
    largest separation wins (the first on ties); an edge axis must beat the best so far by the
    relative bias ``1e-6`` and the best face, and yields to the best face if within ~8° of it
    (``|n·face| > 0.99``) unless 5 % deeper (MuJoCo's rules, so that resting boxes keep their
    face manifold).  A face axis gives up to 8 clipped incident-face vertices
    (:func:`_face_contacts`; a box resting on a box: its 4 face corners at distance 0), an edge
    axis one point (:func:`_edge_contact`) and the other 7 slots at ``FAR``.  For separated
    boxes the distances are those of the same construction (positive), as MuJoCo's within its
    margin."""
    dt = g1.size.dtype
    tol = _tol(dt)
    s1, s2 = g1.size, g2.size
    rot = mtm(g1.rotation, g2.rotation)
    pos21 = mtv(g1.rotation, g2.position - g1.position)
    pos12 = mtv(g2.rotation, g1.position - g2.position)
    rabs = jnp.abs(rot)
    sep_a = jnp.abs(pos21) - s1 - mv(rabs, s2)
    sep_b = jnp.abs(pos12) - s2 - mtv(rabs, s1)
    faces = jnp.concatenate([sep_a, sep_b])
    code_face = jnp.argmax(faces)
    sep_face = jnp.max(faces)
    sep_best, code = sep_face, code_face

    eye = jnp.eye(3, dtype=dt)
    for i in range(3):
        for j in range(3):
            raw = cross(eye[i], rot[:, j])
            norm2 = dot(raw, raw)
            ok = norm2 >= tol["par"]
            ax = raw / jnp.sqrt(jnp.where(ok, norm2, 1.0))
            r1 = dot(s1, jnp.abs(ax))
            r2 = dot(s2 * (1 - eye[j]), jnp.abs(mtv(rot, ax)))
            sep = jnp.abs(dot(ax, pos21)) - r1 - r2
            take = ok & (sep - 1e-6 * jnp.abs(sep) > sep_best) & (sep > sep_face)
            sep_best = jnp.where(take, sep, sep_best)
            code = jnp.where(take, 6 + 3 * i + j, code)

    # an edge axis within ~8° of the best face axis yields to it unless 5 % deeper
    is_edge = code >= 6
    ce = jnp.where(is_edge, code, 6)
    edge_axis, _ = unit(cross(onehot((ce - 6) // 3, 3, dt), mv(rot, onehot((ce - 6) % 3, 3, dt))),
                        jnp.array([1.0, 0.0, 0.0], dt))
    face_axis = jnp.where(code_face < 3, onehot(code_face, 3, dt), mv(rot, onehot(code_face - 3, 3, dt)))
    face_dot = jnp.abs(dot(edge_axis, face_axis))
    is_edge = is_edge & ~((face_dot > 0.99) & (sep_best < sep_face + 0.05 * jnp.abs(sep_face) + MINVAL))

    fd, fp, fn = _face_contacts(g1, g2, rot, pos21, pos12, code_face, tol["dup"])
    ed, ep, en = _edge_contact(g1, g2, rot, pos21, ce, tol["sgn"])
    first = jnp.arange(8) == 0
    distance = jnp.where(is_edge, jnp.where(first, ed, FAR), fd)
    position = jnp.where(is_edge, jnp.broadcast_to(ep, fp.shape), fp)
    normal = jnp.where(is_edge, jnp.broadcast_to(en, fn.shape), fn)
    return Contacts(distance, position, normal)


__all__ = ["box_box"]
