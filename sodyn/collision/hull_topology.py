r"""Convex polytopes for the narrow phase: the topology of a mesh geom's hull, derived from the
model's vertices and face planes, and every polytope-like geom core placed in the world.

**Hull topology** (:func:`hull_topology`).  The model stores a hull as its vertices ``v_i`` and
its face planes ``m_f·x ≤ o_f`` (coplanar triangles merged).  A vertex lies on face ``f`` when
``|m_f·v_i − o_f| ≤ τ ρ`` (``ρ = max |v_i|``; ``τ = TOLERANCE`` of the dtype: above rounding,
below the offset of any vertex of a non-merged neighbouring face on a sensible mesh).  Each face's
vertices, sorted by their angle about the face centroid in the basis ``(t₁, m_f × t₁)``, are its
polygon, counter-clockwise seen from outside.  Its consecutive vertex pairs are directed edges
``a → b``; the face across is the one holding ``b → a`` (a ``V × V`` table), and each undirected
edge is kept once (``a < b``), compacted to ``E = min(V + F − 2, 3V − 6)`` slots (Euler's bound
for the padded sizes).  Padding rows (repeats of the first vertex or face) and zero rows
(non-mesh geoms) are recognised and left out.  It all runs under ``stop_gradient`` on the
model's arrays, once per mesh geom and call (not per world under ``jax.vmap``).

**Cores** (:func:`core_polytope`).  A sphere is its centre point, a capsule its axis segment
(radius added afterwards), a box its 8 corners, a mesh its hull: each as a
:class:`Polytope` in world axes with vertices, outward face planes, face polygons and edges,
each edge with the arc of the Gauss map where it is the support feature (between its two face
normals).  A segment has no faces and its Gauss map is the whole great circle ``⊥`` its axis,
given as four quarter arcs so that every arc is shorter than a half circle.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from sodyn.collision.support import safe_unit
from sodyn.collision.types import GeomFrame, Hull, MeshFrame
from sodyn.spatial import cross, mv

#: Relative distance (of the bounding radius) within which a vertex lies on a face plane.
TOLERANCE = {32: 1e-5, 64: 1e-8}

#: Geom types whose core is a polytope (the radius of a sphere or capsule is added afterwards).
POLYTOPE_TYPES = ("sphere", "capsule", "box", "mesh")


def _tolerance(dtype) -> float:
    return TOLERANCE[64] if jnp.finfo(dtype).bits >= 64 else TOLERANCE[32]


def hull_topology(vertices: Array, faces: Array) -> Hull:
    """The :class:`~sodyn.collision.types.Hull` of one mesh geom from its ``vertices (V, 3)``
    and face planes ``faces (F, 4)`` (module docstring); integer fields only, the arrays
    themselves are passed through."""
    v, fc = jax.lax.stop_gradient((vertices, faces))
    nv, nf = v.shape[0], fc.shape[0]
    ne = max(1, min(nv + nf - 2, 3 * nv - 6))
    m, o = fc[:, :3], fc[:, 3]
    idx_v, idx_f = jnp.arange(nv), jnp.arange(nf)
    vert_ok = ~((idx_v > 0) & jnp.all(v == v[0], axis=-1))
    face_valid = ~((idx_f > 0) & jnp.all(fc == fc[0], axis=-1)) & (jnp.sum(m * m, axis=-1) > 0.25)
    rho = jnp.max(jnp.sqrt(jnp.sum(v * v, axis=-1)))
    on = (jnp.abs(m @ v.T - o[:, None]) <= _tolerance(v.dtype) * rho) & vert_ok[None] & face_valid[:, None]
    count = jnp.sum(on, axis=1)
    centroid = (on.astype(v.dtype) @ v) / jnp.maximum(count, 1)[:, None]
    helper = jax.nn.one_hot(jnp.argmin(jnp.abs(m), axis=-1), 3, dtype=v.dtype)
    t1 = safe_unit(cross(helper, m))
    t2 = cross(m, t1)
    rel = v[None, :, :] - centroid[:, None, :]
    angle = jnp.arctan2(jnp.sum(rel * t2[:, None], -1), jnp.sum(rel * t1[:, None], -1))
    order = jnp.argsort(jnp.where(on, angle, jnp.inf), axis=1)
    k = jnp.arange(nv)[None, :]
    polygon = jnp.where(k < count[:, None], order, order[:, :1])
    nxt = jnp.where(k + 1 < count[:, None], k + 1, 0)
    a, b = polygon, jnp.take_along_axis(polygon, nxt, axis=1)
    directed = (k < count[:, None]) & (count[:, None] >= 3)
    owner = jnp.broadcast_to(idx_f[:, None], a.shape)
    table = jnp.full((nv + 1, nv + 1), -1, jnp.int32).at[jnp.where(directed, a, nv), jnp.where(directed, b, nv)].set(
        owner.astype(jnp.int32))
    across = table[b, a]
    keep = (directed & (a < b) & (across >= 0)).reshape(-1)
    pick = jnp.nonzero(keep, size=ne, fill_value=0)[0]
    edges = jnp.stack([a.reshape(-1)[pick], b.reshape(-1)[pick]], axis=-1)
    edge_faces = jnp.stack([owner.reshape(-1)[pick], across.reshape(-1)[pick]], axis=-1)
    return Hull(vertices, faces, face_valid, polygon.astype(jnp.int32), count.astype(jnp.int32),
                edges.astype(jnp.int32), edge_faces.astype(jnp.int32), jnp.arange(ne) < jnp.sum(keep))


def _box_topology() -> tuple[np.ndarray, ...]:
    """Corner signs ``(8, 3)`` (corner ``i`` has sign ``+`` on axis ``k`` where bit ``k`` of ``i``
    is set), face normals ``(6, 3)`` (``−x, +x, −y, +y, −z, +z``), polygons ``(6, 4)``
    (counter-clockwise from outside), edges ``(12, 2)`` and their faces ``(12, 2)``."""
    signs = np.array([[(i >> k & 1) * 2.0 - 1.0 for k in range(3)] for i in range(8)])
    normals = np.array([[-1.0, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]])
    polygons = []
    for m in normals:
        on = np.flatnonzero(signs @ m > 0)
        t1 = np.cross(np.roll(m, 1), m)
        t2 = np.cross(m, t1)
        polygons.append(on[np.argsort(np.arctan2(signs[on] @ t2, signs[on] @ t1))])
    polygons = np.array(polygons)
    owner = {(int(p[k]), int(p[(k + 1) % 4])): f for f, p in enumerate(polygons) for k in range(4)}
    edges = sorted((a, b) for (a, b) in owner if a < b)
    faces = [(owner[(a, b)], owner[(b, a)]) for a, b in edges]
    return signs, normals, polygons, np.array(edges), np.array(faces)


_BOX_SIGNS, _BOX_NORMALS, _BOX_POLYGONS, _BOX_EDGES, _BOX_EDGE_FACES = _box_topology()


class Polytope(NamedTuple):
    """A convex core in world axes: ``vertices (k, 3)``; faces: outward unit ``normal (f, 3)``,
    ``offset (f,)`` (``normal·x ≤ offset`` inside), ``face_valid (f,)``, ``polygon (f, P)`` and
    ``count (f,)`` (as in :class:`~sodyn.collision.types.Hull`); edges: vertex indices
    ``edges (e, 2)``, Gauss arcs ``arcs (e, 2, 3)`` (the edge supports the polytope in the
    directions between the two unit normals), ``edge_valid (e,)``."""

    vertices: Array
    normal: Array
    offset: Array
    face_valid: Array
    polygon: Array
    count: Array
    edges: Array
    arcs: Array
    edge_valid: Array


def core_vertices(type_: str, g) -> Array:
    """World vertices ``(k, 3)`` of the core of geom ``g`` (type ``type_``, static): differentiable
    in the frame (and the mesh vertices or box size)."""
    r, p, s = g.rotation, g.position, g.size
    if type_ == "sphere":
        return p[None]
    if type_ == "capsule":
        return jnp.stack([p - s[1] * r[:, 2], p + s[1] * r[:, 2]])
    if type_ == "box":
        return p + mv(r, jnp.asarray(_BOX_SIGNS, s.dtype) * s)
    if type_ == "mesh":
        return p + mv(r, g.hull.vertices)
    raise ValueError(f"geom type {type_!r} has no polytope core; polytope types are {POLYTOPE_TYPES}")


def core_polytope(type_: str, g: GeomFrame | MeshFrame) -> Polytope:
    """The :class:`Polytope` of geom ``g``'s core in world axes (module docstring)."""
    vert = core_vertices(type_, g)
    dt = vert.dtype
    r, p = g.rotation, g.position
    if type_ in ("sphere", "capsule"):
        nf = jnp.zeros((0, 3), dt), jnp.zeros((0,), dt), jnp.zeros((0,), bool), jnp.zeros((0, 1), jnp.int32), \
            jnp.zeros((0,), jnp.int32)
        if type_ == "sphere":
            return Polytope(vert, *nf, jnp.zeros((0, 2), jnp.int32), jnp.zeros((0, 2, 3), dt), jnp.zeros((0,), bool))
        u, w = r[:, 0], r[:, 1]
        quarter = jnp.stack([jnp.stack([u, w]), jnp.stack([w, -u]), jnp.stack([-u, -w]), jnp.stack([-w, u])])
        return Polytope(vert, *nf, jnp.tile(jnp.array([[0, 1]], jnp.int32), (4, 1)), quarter, jnp.ones((4,), bool))
    if type_ == "box":
        normal = mv(r, jnp.asarray(_BOX_NORMALS, dt))
        offset = jnp.abs(jnp.asarray(_BOX_NORMALS, dt)) @ g.size + normal @ p
        arcs = normal[jnp.asarray(_BOX_EDGE_FACES)]
        return Polytope(vert, normal, offset, jnp.ones((6,), bool), jnp.asarray(_BOX_POLYGONS, jnp.int32),
                        jnp.full((6,), 4, jnp.int32), jnp.asarray(_BOX_EDGES, jnp.int32), arcs, jnp.ones((12,), bool))
    h = g.hull
    normal = mv(r, h.faces[:, :3])
    offset = h.faces[:, 3] + normal @ p
    arcs = normal[h.edge_faces]
    return Polytope(vert, normal, offset, h.face_valid & (h.count >= 3), h.polygon, h.count, h.edges, arcs,
                    h.edge_valid)


__all__ = ["POLYTOPE_TYPES", "TOLERANCE", "Polytope", "core_polytope", "core_vertices", "hull_topology"]
