"""Closed-form narrow phase for the primitive geom pairs that MuJoCo solves without GJK/EPA.

One function per pair, geom types in MuJoCo's order (plane < sphere < capsule < ellipsoid <
cylinder < box), ``f(g1: GeomFrame, g2: GeomFrame) -> Contacts`` for ONE pair (no batch
axes: ``jax.vmap`` it), pure ``jax.numpy`` (``jit``/``vmap``/``grad``; the input dtype is
kept).  Each returns a fixed number of slots (:data:`SLOTS`): signed distance (negative:
penetration), world position midway between the two surfaces, unit normal from ``g1`` to
``g2``.  A slot carries the distance of its candidate point whatever its sign: there is no
margin here, the force law applies one.  A slot with no candidate at all has
``distance = FAR``, the position and normal of the first slot.

The closed forms follow MuJoCo's (``engine_collision_primitive.c``, ``engine_collision_box.c``,
the plane–ellipsoid support point of ``mjc_PlaneConvex``), so the deepest slot matches the
deepest contact MuJoCo reports.  Planes are infinite (their size is ignored).  Degenerate
directions fall back as MuJoCo's do: coincident sphere centres (or a sphere centre on a
capsule or cylinder axis) take the normal ``z₁ × z₂`` of the two geoms' z axes, or ``x`` if
those are parallel.  The box pairs live in :mod:`sodyn.collision.boxes`."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax.numpy as jnp
from jax import Array

from sodyn.collision.box_box import box_box
from sodyn.collision.boxes import capsule_box, pack, plane_box, safe_div, sphere_box, unit
from sodyn.collision.types import FAR, Contacts, GeomFrame
from sodyn.spatial import cross, dot, mtv, mv


def _fallback_normal(g1: GeomFrame, g2: GeomFrame) -> Array:
    """MuJoCo's normal for coincident centres: ``z₁ × z₂`` normalised, ``x`` if parallel."""
    ex = jnp.array([1.0, 0.0, 0.0], g1.rotation.dtype)
    return unit(cross(g1.rotation[:, 2], g2.rotation[:, 2]), ex)[0]


def _sphere_sphere(c1: Array, r1: Array, c2: Array, r2: Array, fallback: Array) -> tuple[Array, Array, Array]:
    """Two spheres: ``n = (c₂ − c₁)/|c₂ − c₁|``, ``d = |c₂ − c₁| − r₁ − r₂``, position
    ``c₁ + (r₁ + d/2) n``."""
    n, length = unit(c2 - c1, fallback)
    d = length - r1 - r2
    return d, c1 + (r1 + 0.5 * d) * n, n


def _plane_point(n: Array, origin: Array, c: Array, r: Array) -> tuple[Array, Array]:
    """A sphere (centre ``c``, radius ``r``) against the plane ``n·(x − origin) = 0``:
    ``d = n·(c − origin) − r``, position ``c − (r + d/2) n``."""
    d = dot(c - origin, n) - r
    return d, c - (r + 0.5 * d) * n


# ---------------------------------------------------------------------------
# plane pairs
# ---------------------------------------------------------------------------


def plane_sphere(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Plane–sphere, 1 slot: the sphere against the plane (normal ``z₁``), :func:`_plane_point`."""
    n = g1.rotation[:, 2]
    d, pos = _plane_point(n, g1.position, g2.position, g2.size[0])
    return pack([d], [pos], [n])


def plane_capsule(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Plane–capsule, 2 slots: the end spheres ``p₂ ± h z₂`` (radius ``r``) against the plane."""
    n = g1.rotation[:, 2]
    seg = g2.size[1] * g2.rotation[:, 2]
    d1, q1 = _plane_point(n, g1.position, g2.position + seg, g2.size[0])
    d2, q2 = _plane_point(n, g1.position, g2.position - seg, g2.size[0])
    return pack([d1, d2], [q1, q2], [n, n])


def plane_ellipsoid(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Plane–ellipsoid, 1 slot: the ellipsoid's support point in ``−n``.

    For semi-axes ``S = diag(s)`` and ``u = R₂ᵀ(−n)``, the support point of ``{S y : |y| ≤ 1}``
    is ``S² u / |S u|`` (local), ``q = p₂ + R₂ S² u/|S u|`` in the world; ``d = n·(q − p₁)``,
    position ``q − (d/2) n``."""
    n = g1.rotation[:, 2]
    u = mtv(g2.rotation, -n)
    y, _ = unit(g2.size * u, u)
    q = g2.position + mv(g2.rotation, g2.size * y)
    d = dot(q - g1.position, n)
    return pack([d], [q - 0.5 * d * n], [n])


def plane_cylinder(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Plane–cylinder, 4 slots: MuJoCo's ``mjc_PlaneCylinder`` points.

    With plane normal ``n``, the cylinder axis ``a`` turned towards the plane (``n·a ≤ 0``) and
    ``v = r (a(n·a) − n)/|a(n·a) − n|`` (the radial direction most against ``n``; ``r x₂`` if
    the caps are parallel to the plane), ``dist₀ = n·(p₂ − p₁)``:
    slot 0: the deepest rim point ``p₂ + h a + v`` (``d = dist₀ + h n·a + n·v``); slot 1: the
    point above it on the far cap ``p₂ − h a + v``; slots 2, 3: the near-cap rim points at ±120°
    from slot 0, ``p₂ + h a − v/2 ± (√3/2) v × a`` (``d = dist₀ + h n·a − n·v/2``).  A cylinder
    standing on a cap has slots 0, 2, 3 (a triangle) at distance 0.  Positions are moved by
    ``−d n/2``."""
    n = g1.rotation[:, 2]
    r, h = g2.size[0], g2.size[1]
    axis = g2.rotation[:, 2]
    prj = dot(n, axis)
    axis = jnp.where(prj > 0, -axis, axis)
    prj = -jnp.abs(prj)
    dist0 = dot(g2.position - g1.position, n)
    radial, _ = unit(axis * prj - n, g2.rotation[:, 0])
    vec = r * radial
    prjvec = dot(vec, n)
    side = (math.sqrt(3.0) / 2) * cross(vec, axis)
    top = g2.position + h * axis
    d0 = dist0 + h * prj + prjvec
    d1 = dist0 - h * prj + prjvec
    d2 = dist0 + h * prj - 0.5 * prjvec
    points = [top + vec, g2.position - h * axis + vec, top - 0.5 * vec + side, top - 0.5 * vec - side]
    dists = [d0, d1, d2, d2]
    return pack(dists, [q - 0.5 * d * n for q, d in zip(points, dists)], [n] * 4)


# ---------------------------------------------------------------------------
# sphere pairs
# ---------------------------------------------------------------------------


def sphere_sphere(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Sphere–sphere, 1 slot (:func:`_sphere_sphere`)."""
    d, pos, n = _sphere_sphere(g1.position, g1.size[0], g2.position, g2.size[0], _fallback_normal(g1, g2))
    return pack([d], [pos], [n])


def sphere_capsule(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Sphere–capsule, 1 slot: the sphere against the nearest axis point
    ``p₂ + clamp(z₂·(p₁ − p₂), −h, h) z₂`` taken as a sphere of the capsule's radius."""
    axis = g2.rotation[:, 2]
    x = jnp.clip(dot(axis, g1.position - g2.position), -g2.size[1], g2.size[1])
    d, pos, n = _sphere_sphere(g1.position, g1.size[0], g2.position + x * axis, g2.size[0],
                               _fallback_normal(g1, g2))
    return pack([d], [pos], [n])


def sphere_cylinder(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Sphere–cylinder, 1 slot: MuJoCo's ``mjc_SphereCylinder``, by where the sphere centre
    lies, with ``x = a·(p₁ − p₂)`` along the axis and ``ρ`` the radial offset:

    * side (``|x| < h``, ``|ρ| ≥ r``): sphere against the axis point ``p₂ + x a`` of radius ``r``;
    * cap (``|x| ≥ h``, ``|ρ| < r``): sphere against the cap plane, normal ``−sign(x) a``,
      ``d = |x| − h − r₁``;
    * rim (``|x| ≥ h``, ``|ρ| ≥ r``): sphere against the rim point ``p₂ ± h a + r ρ/|ρ|``;
    * centre inside: the side if its depth ``r − |ρ|`` is at most the cap depth ``h − |x|``,
      else the cap."""
    r1 = g1.size[0]
    r, h = g2.size[0], g2.size[1]
    axis = g2.rotation[:, 2]
    fallback = _fallback_normal(g1, g2)
    vec = g1.position - g2.position
    x = dot(axis, vec)
    rho = vec - x * axis
    rho_n, rho_len = unit(rho, fallback)
    side = jnp.abs(x) < h
    cap = dot(rho, rho) < r * r
    inside = side & cap
    cap_first = h - jnp.abs(x) < r - rho_len
    side, cap = side & ~(inside & cap_first), cap & ~(inside & ~cap_first)

    ds, ps, ns = _sphere_sphere(g1.position, r1, g2.position + x * axis, r, fallback)
    s = jnp.where(x > 0, 1.0, -1.0)
    dc, pc = _plane_point(s * axis, g2.position + s * h * axis, g1.position, r1)
    nc = -s * axis
    rim = g2.position + s * h * axis + r * rho_n
    dr, pr, nr = _sphere_sphere(g1.position, r1, rim, 0.0, fallback)
    d = jnp.where(side, ds, jnp.where(cap, dc, dr))
    pos = jnp.where(side, ps, jnp.where(cap, pc, pr))
    n = jnp.where(side, ns, jnp.where(cap, nc, nr))
    return pack([d], [pos], [n])


# ---------------------------------------------------------------------------
# capsule–capsule
# ---------------------------------------------------------------------------


def capsule_capsule(g1: GeomFrame, g2: GeomFrame) -> Contacts:
    """Capsule–capsule, 2 slots: sphere–sphere contacts between points of the two segments
    ``p₁ + x₁ a₁``, ``p₂ + x₂ a₂`` (``a = h z``, ``x ∈ [−1, 1]``).

    Normal equations ``[[ma, mb], [mb, mc]] (x₁, x₂) = (u, v)`` with ``ma = a₁·a₁``,
    ``mb = −a₁·a₂``, ``mc = a₂·a₂``, ``u = a₁·(p₂ − p₁)``, ``v = a₂·(p₁ − p₂)``.

    * Slot 0, the nearest points (MuJoCo's): the unconstrained solution, ``x₁`` clamped and
      ``x₂`` re-solved, then ``x₂`` clamped and ``x₁`` re-solved and clamped.  Axes parallel
      within ``det < 10⁻⁸ ma mc`` (MuJoCo 3.17's threshold; also a zero-length capsule): the
      nearest points are not unique and slot 0 takes the start of the overlap below.
    * Slot 1, a second point so that a capsule lies stably on a capsule: the end of the
      overlap of the two segments along axis 1 (``x₁`` between the projections
      ``(u ± mb)/ma`` of capsule 2's ends, clamped to ``[−1, 1]``) farther from slot 0's ``x₁``,
      against its nearest point on segment 2.  Parallel capsules get both ends of their
      overlap (distance equal to slot 0's), crossing ones a point farther out (larger
      distance).  The slot is unused (``FAR``) when the overlap is no longer than the smaller
      radius (e.g. capsules crossing at right angles, where it would repeat slot 0).

    MuJoCo's parallel branch reports up to two of its four end-to-segment tests; its deepest
    is the overlap distance matched here unless two non-overlapping end tests come first."""
    r1, h1, r2, h2 = g1.size[0], g1.size[1], g2.size[0], g2.size[1]
    a1 = h1 * g1.rotation[:, 2]
    a2 = h2 * g2.rotation[:, 2]
    dif = g1.position - g2.position
    ma, mb, mc = dot(a1, a1), -dot(a1, a2), dot(a2, a2)
    u, v = -dot(a1, dif), dot(a2, dif)
    det = ma * mc - mb * mb
    eps = max(1e-8, 16 * float(jnp.finfo(det.dtype).eps))
    parallel = det < eps * ma * mc

    x1 = safe_div(mc * u - mb * v, det)
    x2 = safe_div(ma * v - mb * u, det)
    out1 = jnp.abs(x1) > 1
    x1 = jnp.clip(x1, -1.0, 1.0)
    x2 = jnp.where(out1, safe_div(v - mb * x1, mc), x2)
    out2 = jnp.abs(x2) > 1
    x2 = jnp.clip(x2, -1.0, 1.0)
    x1 = jnp.where(out2, jnp.clip(safe_div(u - mb * x2, ma), -1.0, 1.0), x1)

    t_plus, t_minus = safe_div(u - mb, ma), safe_div(u + mb, ma)
    lo = jnp.clip(jnp.minimum(t_plus, t_minus), -1.0, 1.0)
    hi = jnp.clip(jnp.maximum(t_plus, t_minus), -1.0, 1.0)
    x1 = jnp.where(parallel, lo, x1)
    x2 = jnp.where(parallel, jnp.clip(safe_div(v - mb * x1, mc), -1.0, 1.0), x2)
    y1 = jnp.where(jnp.abs(hi - x1) > jnp.abs(lo - x1), hi, lo)
    y2 = jnp.clip(safe_div(v - mb * y1, mc), -1.0, 1.0)
    second = (hi - lo) * h1 > jnp.minimum(r1, r2)

    fallback = _fallback_normal(g1, g2)
    d0, q0, n0 = _sphere_sphere(g1.position + x1 * a1, r1, g2.position + x2 * a2, r2, fallback)
    d1, q1, n1 = _sphere_sphere(g1.position + y1 * a1, r1, g2.position + y2 * a2, r2, fallback)
    return pack([d0, jnp.where(second, d1, FAR)], [q0, jnp.where(second, q1, q0)], [n0, jnp.where(second, n1, n0)])


#: Each pair's function, keyed by geom type names in MuJoCo's order.
PAIR_FUNCTIONS: dict[tuple[str, str], Callable[[GeomFrame, GeomFrame], Contacts]] = {
    ("plane", "sphere"): plane_sphere,
    ("plane", "capsule"): plane_capsule,
    ("plane", "ellipsoid"): plane_ellipsoid,
    ("plane", "cylinder"): plane_cylinder,
    ("plane", "box"): plane_box,
    ("sphere", "sphere"): sphere_sphere,
    ("sphere", "capsule"): sphere_capsule,
    ("sphere", "cylinder"): sphere_cylinder,
    ("sphere", "box"): sphere_box,
    ("capsule", "capsule"): capsule_capsule,
    ("capsule", "box"): capsule_box,
    ("box", "box"): box_box,
}

#: The number of contact slots each pair function returns.
SLOTS: dict[tuple[str, str], int] = {
    ("plane", "sphere"): 1,
    ("plane", "capsule"): 2,
    ("plane", "ellipsoid"): 1,
    ("plane", "cylinder"): 4,
    ("plane", "box"): 4,
    ("sphere", "sphere"): 1,
    ("sphere", "capsule"): 1,
    ("sphere", "cylinder"): 1,
    ("sphere", "box"): 1,
    ("capsule", "capsule"): 2,
    ("capsule", "box"): 2,
    ("box", "box"): 8,
}

__all__ = ["PAIR_FUNCTIONS", "SLOTS", "box_box", "capsule_box", "capsule_capsule", "plane_box", "plane_capsule",
           "plane_cylinder", "plane_ellipsoid", "plane_sphere", "sphere_box", "sphere_capsule", "sphere_cylinder",
           "sphere_sphere"]
