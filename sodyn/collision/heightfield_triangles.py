r"""One height-field triangle against one geom: the candidate contacts of
:mod:`sodyn.collision.heightfield`, all in the height field's frame.

A triangle ``(a, b, c)`` is counter-clockwise seen from above, with the unit upward normal
``m = (b − a) × (c − a)/|…|``.  Each function returns, per triangle, the signed ``distance``
(negative: penetration), the unit ``normal`` from the terrain to the geom and the terrain witness
``q`` (a point of the triangle; the contact position is ``q + (d/2) n``).

**Sphere and capsule** (closed forms).  The core (centre ``c``, or segment ``[p₀, p₁]``) and the
triangle's nearest points ``(s, q)``: for a point, its projection on the plane if that lies in
the triangle, else the nearest of the three edges' clamped projections; for a segment, the best
of its crossing of the triangle (distance 0), its two end points against the triangle and the
segment against each edge (exact segment–segment nearest points: one parameter clamped, the
other re-solved and clamped).  Ties go to the end points, so that a capsule lying on a face
reports its ends.  The contact is ``d = |s − q| − r``, ``n = (s − q)/|s − q|``, the exact
distance of the rounded core to the triangle, unless the core has passed through the triangle
itself (it crosses it, or ``s`` or an end point lies in the triangle's column below it): then the
face normal is used, ``n = m``, ``d = min(m·(x − a)) − r`` over those of ``s`` and the end points
that lie in the column below the triangle, so that the depth keeps growing.

**Other geoms** (:func:`prism`).  The triangle's column down to the base, ``{(x, y) in the
triangle, −z_base ≤ z ≤ surface}`` (MuJoCo's prism), as a convex hull
(:class:`~sodyn.collision.types.MeshFrame`) for the hull narrow phase
(:mod:`~sodyn.collision.hull_contacts`, :mod:`~sodyn.collision.hull_curved`), whose contact of the
geom and the prism is exact; its witness on the prism says whether the contact is on the
triangle or on a wall (:func:`barycentric`).

**Surface points** (:func:`surface_contact`).  A point ``p`` of the geom (a box corner, a hull
vertex, a capsule end, a cylinder rim point) against the plane of the triangle under it:
``d = m·(p − a) − r``, ``n = m`` (the local tangent plane: exact on a face, a lower bound of the
distance elsewhere).  They give a resting face its contact polygon.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import Array

from sodyn.collision.support import safe_unit
from sodyn.collision.types import GeomFrame, Hull, MeshFrame
from sodyn.spatial import cross, dot, mv


def normal(tri: Array) -> Array:
    """The unit upward normal of triangles ``tri (..., 3, 3)`` (counter-clockwise from above)."""
    return safe_unit(cross(tri[..., 1, :] - tri[..., 0, :], tri[..., 2, :] - tri[..., 0, :]))


def barycentric(tri: Array, p: Array) -> Array:
    """Barycentric coordinates ``(3,)`` of the horizontal position of ``p`` in the triangle's
    horizontal projection (never degenerate: a grid triangle covers half a cell)."""
    a, b, c = tri[0, :2], tri[1, :2], tri[2, :2]
    x = p[:2]

    def area(u, v, w):
        return (v[0] - u[0]) * (w[1] - u[1]) - (v[1] - u[1]) * (w[0] - u[0])

    la, lb = area(x, b, c) / area(a, b, c), area(a, x, c) / area(a, b, c)
    return jnp.stack([la, lb, 1.0 - la - lb])


def _safe_div(a: Array, b: Array, ok: Array) -> Array:
    return jnp.where(ok, a / jnp.where(ok, b, 1.0), 0.0)


def _on_edge(p: Array, u: Array, v: Array) -> Array:
    """The point of segment ``[u, v]`` nearest ``p``."""
    e = v - u
    return u + jnp.clip(dot(p - u, e) / dot(e, e), 0.0, 1.0) * e


def point_triangle(p: Array, tri: Array, m: Array) -> Array:
    """The point of the triangle nearest ``p``."""
    a, b, c = tri
    f = p - dot(p - a, m) * m
    inside = jnp.all(barycentric(tri, f) >= 0.0)
    edges = jnp.stack([_on_edge(p, a, b), _on_edge(p, b, c), _on_edge(p, c, a)])
    k = jnp.argmin(jnp.sum((edges - p) ** 2, axis=-1))
    return jnp.where(inside, f, edges[k])


def segment_segment(p1: Array, q1: Array, p2: Array, q2: Array) -> tuple[Array, Array]:
    """Parameters ``(s, t) ∈ [0, 1]²`` of the nearest points ``p₁ + s(q₁ − p₁)``,
    ``p₂ + t(q₂ − p₂)`` of two segments (the second of positive length): the lines' ``s``
    clamped, ``t`` re-solved, and where ``t`` leaves ``[0, 1]`` it is clamped and ``s`` re-solved."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f, c, b = dot(d1, d1), dot(d2, d2), dot(d2, r), dot(d1, r), dot(d1, d2)
    tiny = jnp.finfo(a.dtype).tiny
    denom = a * e - b * b
    s = jnp.clip(_safe_div(b * f - c * e, denom, denom > 1e-12 * a * e + tiny), 0.0, 1.0)
    t = (b * s + f) / e
    has = a > tiny
    s = jnp.where(t < 0, jnp.clip(_safe_div(-c, a, has), 0.0, 1.0),
                  jnp.where(t > 1, jnp.clip(_safe_div(b - c, a, has), 0.0, 1.0), s))
    return s, jnp.clip(t, 0.0, 1.0)


def core_triangle(p0: Array, p1: Array, radius: Array, tri: Array) -> tuple[Array, Array, Array]:
    """``(distance, normal, q)`` of the rounded segment ``[p₀, p₁]`` (a point when ``p₀ = p₁``)
    of radius ``radius`` against one triangle (module docstring)."""
    a = tri[0]
    m = normal(tri)
    dt = p0.dtype
    h0, h1 = dot(p0 - a, m), dot(p1 - a, m)
    crosses = h0 * h1 < 0
    x = p0 + _safe_div(h0, h0 - h1, crosses) * (p1 - p0)
    through = crosses & jnp.all(barycentric(tri, x) >= 0.0)
    q0, q1 = point_triangle(p0, tri, m), point_triangle(p1, tri, m)
    cores, feet = [x, p0, p1], [x, q0, q1]
    for k in range(3):
        u, v = tri[k], tri[(k + 1) % 3]
        s, t = segment_segment(p0, p1, u, v)
        cores.append(p0 + s * (p1 - p0))
        feet.append(u + t * (v - u))
    cores, feet = jnp.stack(cores), jnp.stack(feet)
    gap2 = jnp.sum((cores - feet) ** 2, axis=-1)
    gap2 = jnp.where(jnp.arange(6) == 0, jnp.where(through, 0.0, jnp.inf), gap2)
    k = jnp.argmin(gap2)
    s, q = cores[k], feet[k]
    sq = dot(s - q, s - q)
    through, u0, u1 = (k == 0) | _under(s, tri), _under(p0, tri), _under(p1, tri)
    below = through | u0 | u1
    apart = ~below & (sq > jnp.finfo(dt).tiny)
    length = jnp.sqrt(jnp.where(apart, sq, 1.0))
    n = jnp.where(apart, (s - q) / length, m)
    low = jnp.minimum(jnp.where(through, dot(s - a, m), jnp.inf),
                      jnp.minimum(jnp.where(u0, h0, jnp.inf), jnp.where(u1, h1, jnp.inf)))
    return jnp.where(apart, length, jnp.where(below, low, dot(s - q, m))) - radius, n, q


def _under(p: Array, tri: Array) -> Array:
    """Whether ``p`` lies in the triangle's column below it (inside the terrain, under it)."""
    lam = barycentric(tri, p)
    return jnp.all(lam >= 0.0) & (p[2] < dot(lam, tri[:, 2]))


# ---------------------------------------------------------------------------
# prisms for the hull narrow phase
# ---------------------------------------------------------------------------

#: The prism's vertices are the bottom ``0, 1, 2`` and top ``3, 4, 5`` (above ``0, 1, 2``);
#: faces: top, bottom, then the wall under edge ``k → k+1`` of the top triangle.
_POLYGONS = np.array([[3, 4, 5, 3], [0, 2, 1, 0], [0, 1, 4, 3], [1, 2, 5, 4], [2, 0, 3, 5]])
_COUNT = np.array([3, 3, 4, 4, 4])
_EDGES = np.array([[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [3, 5], [0, 3], [1, 4], [2, 5]])
#: Per edge: the face whose boundary runs ``a → b``, and the face across.
_EDGE_FACES = np.array([[2, 1], [3, 1], [1, 4], [0, 2], [0, 3], [4, 0], [4, 2], [2, 3], [3, 4]])


def prism(tri: Array, base: float) -> MeshFrame:
    """The column of triangle ``tri`` down to ``z = −base`` as a hull in the height field's
    frame (identity pose; module docstring)."""
    dt = tri.dtype
    bottom = tri.at[:, 2].set(-base)
    v = jnp.concatenate([bottom, tri])
    m = normal(tri)
    walls = jnp.stack([safe_unit(jnp.stack([tri[(k + 1) % 3, 1] - tri[k, 1], tri[k, 0] - tri[(k + 1) % 3, 0],
                                            jnp.zeros((), dt)])) for k in range(3)])
    normals = jnp.concatenate([m[None], jnp.array([[0.0, 0.0, -1.0]], dt), walls])
    offsets = jnp.concatenate([dot(m, tri[0])[None], jnp.full((1,), base, dt), jnp.sum(walls * tri, axis=-1)])
    polygon = jnp.asarray(np.concatenate([_POLYGONS, np.repeat(_POLYGONS[:, :1], 2, axis=1)], axis=1), jnp.int32)
    hull = Hull(v, jnp.concatenate([normals, offsets[:, None]], axis=1), jnp.ones((5,), bool), polygon,
                jnp.asarray(_COUNT, jnp.int32), jnp.asarray(_EDGES, jnp.int32), jnp.asarray(_EDGE_FACES, jnp.int32),
                jnp.ones((9,), bool))
    rho = jnp.sqrt(jnp.max(jnp.sum(v * v, axis=-1)))
    return MeshFrame(jnp.eye(3, dtype=dt), jnp.zeros(3, dt), jnp.stack([rho, 0 * rho, 0 * rho]), hull)


# ---------------------------------------------------------------------------
# surface points
# ---------------------------------------------------------------------------

_CORNERS = np.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)])


def surface_points(type_: str, g: GeomFrame | MeshFrame) -> tuple[Array, Array]:
    """The geom's points tested against the triangle under them, ``(k, 3)``, and the radius
    they carry: a box's corners, a mesh's hull vertices, a capsule's end points (radius ``r``),
    and a cylinder's four points of MuJoCo's plane–cylinder contact for the plane ``z = 0``
    (the lowest rim point, the one above it on the other cap, and the lowest cap's rim points
    at ±120°); none for a sphere or an ellipsoid (a single smooth point of contact)."""
    r, p, s = g.rotation, g.position, g.size
    dt = p.dtype
    zero = jnp.zeros((), dt)
    if type_ == "box":
        return p + mv(r, jnp.asarray(_CORNERS, dt) * s), zero
    if type_ == "mesh":
        return p + mv(r, g.hull.vertices), zero
    if type_ == "capsule":
        return jnp.stack([p - s[1] * r[:, 2], p + s[1] * r[:, 2]]), s[0]
    if type_ == "cylinder":
        up = jnp.array([0.0, 0.0, 1.0], dt)
        axis = r[:, 2] * jnp.where(r[2, 2] > 0, -1.0, 1.0)          # towards the plane
        vec = s[0] * safe_unit(axis * dot(axis, up) - up, r[:, 0], jnp.sqrt(jnp.finfo(dt).eps))
        side = (np.sqrt(3.0) / 2) * cross(vec, axis)
        near = p + s[1] * axis
        return jnp.stack([near + vec, p - s[1] * axis + vec, near - 0.5 * vec + side, near - 0.5 * vec - side]), zero
    return jnp.zeros((0, 3), dt), zero


def surface_contact(p: Array, radius: Array, tri: Array) -> tuple[Array, Array, Array]:
    """``(distance, normal, q)`` of point ``p`` (with ``radius``) against the plane of the
    triangle under it: ``d = m·(p − a) − r``, ``n = m``, ``q = p − (r + d) m``."""
    m = normal(tri)
    d = dot(p - tri[0], m) - radius
    return d, m, p - (radius + d) * m


__all__ = ["barycentric", "core_triangle", "normal", "point_triangle", "prism", "segment_segment", "surface_contact",
           "surface_points"]
