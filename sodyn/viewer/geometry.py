"""The drawable geometry of a model: a :class:`Scene` of triangle :class:`Part`\\ s, each fixed
to a body, and the world poses that place them.

**Where the triangles come from** (:meth:`Scene.build`), first that applies:

1. ``visuals`` (:func:`sodyn.io.visuals.load_visuals`: URDF ``<visual>``, MJCF visual geoms),
   each bound to its model frame: a visual on frame ``f`` is fixed to body
   ``model.frame_body[f]`` at the frame's placement composed with the visual's pose;
2. the model's collision geoms (:class:`sodyn.Geoms`: primitives, and mesh geoms as their
   convex hulls);
3. a skeleton: a capsule from each body's origin to each child's joint and to each frame on
   it, a sphere at each joint, a box at each prismatic joint (a cart).

Primitives are tessellated (``trimesh.creation``); meshes are decimated so that the scene holds
about ``max_triangles`` triangles in all, each mesh keeping a share proportional to its
triangle count (at least :data:`MIN_TRIANGLES`): by quadric edge collapse
(``fast_simplification``, through trimesh) when installed, else by vertex clustering.  A mesh
with per-face colours is decimated colour by colour.  A part whose decimated mesh is
consistently wound with outward normals (a positive signed volume) is marked ``closed``: its
back faces are culled (an open shell seen through its opening would show its far side
missing).  Plane visuals and geoms on the world are not triangulated: they give the ground
(:attr:`Scene.ground`).

**Poses** (:func:`body_poses`): the world poses of every body for a batch of configurations,
one jitted ``vmap`` of :func:`sodyn.forward_kinematics` (Jain Alg. 3.1), with an identity pose
appended for the world (index ``-1``).
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import numpy as np

from sodyn.algorithms.kinematics import forward_kinematics
from sodyn.io.visuals import Visual
from sodyn.model import Model

#: Triangles a scene holds at most (meshes are decimated to fit), unless told otherwise.
DEFAULT_MAX_TRIANGLES = 24_000
#: The fewest triangles a decimated mesh keeps.
MIN_TRIANGLES = 40
#: Most convex-hull vertices kept per part (for shadows).
HULL_POINTS = 48
#: Colours of the fallbacks: collision geoms, skeleton links, skeleton joints.
GEOM_RGBA = (0.55, 0.62, 0.75, 1.0)
LINK_RGBA = (0.30, 0.50, 0.80, 1.0)
JOINT_RGBA = (0.20, 0.22, 0.26, 1.0)


@dataclasses.dataclass(frozen=True, eq=False)
class Part:
    """Triangles fixed to one body: ``body`` (``-1``: the world), ``vertices (n, 3)`` in the
    body frame, ``triangles (m, 3)``, ``face_rgba (m, 4)``, ``closed`` (back faces may be
    culled)."""

    name: str
    body: int
    vertices: np.ndarray
    triangles: np.ndarray
    face_rgba: np.ndarray
    closed: bool


class Scene:
    """The parts of a model, stacked for drawing.

    ``parts``; ``source``: ``"visual"``, ``"geoms"`` or ``"skeleton"`` (module docstring);
    ``ground``: ``(normal (3,), height)`` of a plane in the model, else ``None``; stacked arrays
    ``vertices (N, 3)`` (body frames), ``vertex_body (N,)``, ``normals (N, 3)`` (area-weighted
    vertex normals, body frames), ``triangles (M, 3)`` (into ``vertices``), ``face_rgba (M, 4)``,
    ``face_closed (M,)``, ``face_part (M,)``; ``hull_points (K, 3)`` (body frames),
    ``hull_body (K,)``, ``hull_part (K,)``: at most :data:`HULL_POINTS` vertices of each part's
    convex hull (its shadow is their projection's hull)."""

    def __init__(self, model: Model, parts: list[Part], source: str, ground=None):
        self.model, self.parts, self.source, self.ground = model, tuple(parts), source, ground
        offsets = np.cumsum([0] + [len(p.vertices) for p in parts])
        self.vertices = np.concatenate([p.vertices for p in parts] or [np.zeros((0, 3))])
        self.vertex_body = np.concatenate([np.full(len(p.vertices), p.body) for p in parts] or [np.zeros(0, int)])
        self.triangles = np.concatenate([p.triangles + o for p, o in zip(parts, offsets)] or [np.zeros((0, 3), int)])
        self.face_rgba = np.concatenate([p.face_rgba for p in parts] or [np.zeros((0, 4))])
        self.face_closed = np.concatenate([np.full(len(p.triangles), p.closed) for p in parts] or [np.zeros(0, bool)])
        self.face_part = np.concatenate([np.full(len(p.triangles), i) for i, p in enumerate(parts)]
                                        or [np.zeros(0, int)])
        self.normals = vertex_normals(self.vertices, self.triangles)
        hulls = [hull_points(p.vertices) for p in parts]
        self.hull_points = np.concatenate(hulls or [np.zeros((0, 3))])
        self.hull_body = np.concatenate([np.full(len(h), p.body) for h, p in zip(hulls, parts)] or [np.zeros(0, int)])
        self.hull_part = np.concatenate([np.full(len(h), i) for i, h in enumerate(hulls)] or [np.zeros(0, int)])

    @property
    def n_triangles(self) -> int:
        return int(len(self.triangles))

    def __repr__(self) -> str:
        return (f"Scene({self.model.name!r}, {len(self.parts)} parts from {self.source}, "
                f"{self.n_triangles} triangles)")

    @classmethod
    def build(cls, model: Model, visuals: tuple[Visual, ...] | None = None, *,
              max_triangles: int = DEFAULT_MAX_TRIANGLES) -> Scene:
        """The scene of ``model`` drawn from ``visuals``, else its collision geoms, else a
        skeleton (module docstring), meshes decimated to about ``max_triangles`` in all.
        **Raises** ``ValueError`` for a visual whose frame the model lacks (visuals of another
        model)."""
        if not (isinstance(max_triangles, int) and max_triangles >= MIN_TRIANGLES):
            raise ValueError(f"max_triangles must be an integer >= {MIN_TRIANGLES}, got {max_triangles!r}")
        if visuals:
            return _from_visuals(model, visuals, max_triangles)
        if len(model.geoms):
            scene = _from_visuals(model, _geom_visuals(model), max_triangles, source="geoms", by_body=True)
            if scene.parts:
                return scene
        return cls(model, _skeleton(model), "skeleton")

    def world_vertices(self, body_r: np.ndarray, body_p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World vertices ``(N, 3)`` and normals ``(N, 3)`` for body poses ``body_r (n+1, 3, 3)``,
        ``body_p (n+1, 3)`` (:func:`body_poses` of one configuration; the last is the world)."""
        r = body_r[self.vertex_body]
        return (np.einsum("nij,nj->ni", r, self.vertices) + body_p[self.vertex_body],
                np.einsum("nij,nj->ni", r, self.normals))


def _fk(model: Model, q):
    fk = forward_kinematics(model, q)
    return fk.body.rotation, fk.body.translation


_fk_batch = eqx.filter_jit(jax.vmap(_fk, in_axes=(None, 0)))


def body_poses(model: Model, qs) -> tuple[np.ndarray, np.ndarray]:
    """World rotations ``(T, n + 1, 3, 3)`` and origins ``(T, n + 1, 3)`` of every body for the
    configurations ``qs (T, nq)`` (float64 NumPy), the world's identity pose last; the batch is
    padded to a multiple of 32 so that trajectories of similar lengths share one compilation."""
    qs = np.asarray(qs)
    t = len(qs)
    pad = (-t) % 32
    padded = np.concatenate([qs, np.repeat(qs[-1:], pad, axis=0)]) if pad else qs
    r, p = _fk_batch(model, np.asarray(padded, np.asarray(model.mass).dtype))
    r, p = np.asarray(r, np.float64)[:t], np.asarray(p, np.float64)[:t]
    eye = np.broadcast_to(np.eye(3), (t, 1, 3, 3))
    return np.concatenate([r, eye], axis=1), np.concatenate([p, np.zeros((t, 1, 3))], axis=1)


def hull_points(vertices: np.ndarray) -> np.ndarray:
    """Up to :data:`HULL_POINTS` vertices of the convex hull of ``vertices`` (evenly taken when
    it has more; all the vertices when they span no volume)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        pts = vertices[ConvexHull(vertices).vertices]
    except (QhullError, ValueError):
        pts = vertices
    if len(pts) > HULL_POINTS:
        pts = pts[np.linspace(0, len(pts) - 1, HULL_POINTS).astype(int)]
    return np.asarray(pts, np.float64)


def vertex_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals (zero for a vertex on no triangle)."""
    n = np.zeros_like(vertices)
    if len(triangles):
        a, b, c = (vertices[triangles[:, k]] for k in range(3))
        cross = np.cross(b - a, c - a)
        for k in range(3):
            np.add.at(n, triangles[:, k], cross)
    norm = np.linalg.norm(n, axis=1, keepdims=True)
    return np.divide(n, norm, out=np.zeros_like(n), where=norm > 0)


# ---------------------------------------------------------------------------
# tessellation and decimation
# ---------------------------------------------------------------------------


def primitive_mesh(kind: str, size, small: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and triangles of a primitive of MuJoCo size ``size`` in its own frame
    (``small``: fewer triangles, for shapes that cover few pixels)."""
    import trimesh

    s = np.asarray(size, np.float64)
    if kind == "box":
        m = trimesh.creation.box(extents=2 * s)
    elif kind == "sphere":
        m = trimesh.creation.icosphere(subdivisions=1 if small else 2, radius=s[0])
    elif kind == "ellipsoid":
        m = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        m.vertices = m.vertices * s
    elif kind == "cylinder":
        m = trimesh.creation.cylinder(radius=s[0], height=2 * s[1], sections=20)
    elif kind == "capsule":
        m = trimesh.creation.capsule(height=2 * s[1], radius=s[0], count=[10, 6] if small else [16, 12])
    else:
        raise ValueError(f"no tessellation for a {kind!r} shape")
    return np.asarray(m.vertices, np.float64), np.asarray(m.faces, np.int64)


def decimate(vertices: np.ndarray, triangles: np.ndarray, face_rgba: np.ndarray, target: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """A mesh with about ``target`` triangles (module docstring): vertices, triangles, face
    colours and whether it is closed (outward wound: back faces may be culled)."""
    import trimesh

    colours, index = np.unique(np.round(face_rgba, 3), axis=0, return_inverse=True)
    index = index.reshape(-1)
    out_v, out_t, out_c, closed = [], [], [], True
    offset = 0
    for k, colour in enumerate(colours):
        faces = triangles[index == k]
        mesh = trimesh.Trimesh(np.array(vertices), np.array(faces), process=True)  # merges duplicate vertices
        share = max(MIN_TRIANGLES // 2, int(round(target * len(faces) / len(triangles))))
        if len(mesh.faces) > share:
            mesh = _simplify(mesh, share)
        if len(mesh.faces) == 0:
            continue
        closed &= bool(mesh.is_winding_consistent and mesh.volume > 0)
        out_v.append(np.asarray(mesh.vertices, np.float64))
        out_t.append(np.asarray(mesh.faces, np.int64) + offset)
        out_c.append(np.broadcast_to(colour, (len(mesh.faces), 4)))
        offset += len(mesh.vertices)
    if not out_t:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros((0, 4)), False
    return np.concatenate(out_v), np.concatenate(out_t), np.concatenate(out_c), closed


def _simplify(mesh, target: int):
    """Quadric decimation (fast_simplification) if installed, else vertex clustering."""
    import trimesh

    try:
        return mesh.simplify_quadric_decimation(face_count=target)
    except ImportError:
        pass
    v, f = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    extent = float(np.max(np.ptp(v, axis=0))) or 1.0
    cell = extent / 4.0
    for _ in range(24):  # the coarsest grid that still keeps `target` triangles
        key = np.floor(v / cell).astype(np.int64)
        _, cluster = np.unique(key, axis=0, return_inverse=True)
        cluster = cluster.reshape(-1)
        g = cluster[f]
        keep = (g[:, 0] != g[:, 1]) & (g[:, 1] != g[:, 2]) & (g[:, 0] != g[:, 2])
        if keep.sum() >= target or cell < 1e-4 * extent:
            break
        cell *= 0.75
    centres = np.zeros((cluster.max() + 1, 3))
    np.add.at(centres, cluster, v)
    centres /= np.bincount(cluster)[:, None]
    return trimesh.Trimesh(centres, g[keep], process=True)


# ---------------------------------------------------------------------------
# building from visuals, geoms or the skeleton
# ---------------------------------------------------------------------------


def _bind(model: Model, frame: str | None) -> tuple[int, np.ndarray, np.ndarray]:
    """(body, rotation, translation) of a frame's placement on its body (the world for None)."""
    if frame is None:
        return -1, np.eye(3), np.zeros(3)
    f = model.frame_id(frame)
    return (int(model.frame_body[f]), np.asarray(model.frame_rotation[f], np.float64),
            np.asarray(model.frame_translation[f], np.float64))


def _from_visuals(model: Model, visuals, max_triangles: int, source: str = "visual", by_body: bool = False) -> Scene:
    missing = sorted({v.frame for v in visuals if v.frame is not None and v.frame not in model.frame_names})
    if missing and not by_body:
        raise ValueError(f"visuals name frames that model {model.name!r} lacks: {missing[:8]} (visuals of another "
                         "model?)")
    shapes, ground = [], None
    for v in visuals:
        body, r, p = (v.frame, np.eye(3), np.zeros(3)) if by_body else _bind(model, v.frame)
        rot, trans = r @ v.rotation, r @ v.translation + p
        if v.kind == "plane":
            if body == -1 and ground is None:
                ground = (rot[:, 2], float(rot[:, 2] @ trans))
            continue
        if v.kind == "mesh":
            verts, tris = np.asarray(v.vertices, np.float64), np.asarray(v.triangles, np.int64)
            rgba = v.face_rgba if v.face_rgba is not None else np.broadcast_to(v.rgba, (len(tris), 4))
        else:
            verts, tris = primitive_mesh(v.kind, v.size)
            rgba = np.broadcast_to(v.rgba, (len(tris), 4))
        shapes.append((v.name, body, verts @ rot.T + trans, tris, np.asarray(rgba, np.float64), v.kind))
    mesh_total = max(1, sum(len(s[3]) for s in shapes if s[5] == "mesh"))
    budget = max_triangles - sum(len(s[3]) for s in shapes if s[5] != "mesh")
    parts = []
    for name, body, verts, tris, rgba, kind in shapes:
        if len(tris) == 0:
            continue
        target = max(MIN_TRIANGLES, int(budget * len(tris) / mesh_total)) if kind == "mesh" else len(tris)
        verts, tris, rgba, closed = decimate(verts, tris, rgba, target)
        if len(tris):
            parts.append(Part(name, body, verts, tris, rgba, closed))
    return Scene(model, parts, source, ground)


def _geom_visuals(model: Model) -> list[Visual]:
    """Visual records of the collision geoms (bodies in place of frames: ``frame`` holds the
    body index), mesh geoms as the triangles of their convex hulls."""
    from scipy.spatial import ConvexHull, QhullError

    g = model.geoms
    rot, trans, size = (np.asarray(x, np.float64) for x in (g.rotation, g.translation, g.size))
    out = []
    for i, kind in enumerate(g.type):
        verts = tris = None
        if kind == "hfield":
            continue
        if kind == "mesh":
            pts = np.unique(np.asarray(g.vertices[i], np.float64), axis=0)
            try:
                hull = ConvexHull(pts)
            except (QhullError, ValueError):
                continue
            verts, tris = pts, np.asarray(hull.simplices, np.int64)
        out.append(Visual(name=g.names[i], frame=int(g.body[i]), kind=kind, size=size[i], rotation=rot[i],
                          translation=trans[i], rgba=np.asarray(GEOM_RGBA), vertices=verts, triangles=tris))
    return out


def _skeleton(model: Model) -> list[Part]:
    """Capsules along the links, spheres at the joints, boxes at prismatic joints."""
    parent = np.asarray(model.parent)
    tree_t = np.asarray(model.tree_translation, np.float64)
    frame_t = np.asarray(model.frame_translation, np.float64)
    segments: list[tuple[int, np.ndarray, np.ndarray]] = []
    for k in range(model.n_bodies):
        if parent[k] >= 0:
            segments.append((int(parent[k]), np.zeros(3), tree_t[k]))
        elif model.joint_types[k] != "free":
            segments.append((-1, np.zeros(3), tree_t[k]))
    for f, b in enumerate(model.frame_body):
        if b >= 0:
            segments.append((int(b), np.zeros(3), frame_t[f]))
    lengths = [float(np.linalg.norm(b - a)) for _, a, b in segments]
    scale = max(lengths, default=0.0) or 0.2
    radius = float(np.clip(0.05 * scale, 0.004, 0.05))
    parts = []
    for i, (body, a, b) in enumerate(segments):
        length = float(np.linalg.norm(b - a))
        if length < 1e-9:
            continue
        verts, tris = primitive_mesh("capsule", (radius, 0.5 * length, 0.0), small=True)
        parts.append(_placed(f"link{i}", body, verts, tris, _z_to(b - a), 0.5 * (a + b), LINK_RGBA))
    for k in range(model.n_bodies):
        kind = model.joint_types[k]
        if kind == "prismatic":
            verts, tris = primitive_mesh("box", (3 * radius, 2 * radius, 1.5 * radius))
        elif kind == "fixed":
            continue
        else:
            verts, tris = primitive_mesh("sphere", (1.5 * radius, 0.0, 0.0), small=True)
        parts.append(_placed(f"joint{k}", k, verts, tris, np.eye(3), np.zeros(3), JOINT_RGBA))
    return parts


def _placed(name, body, verts, tris, rot, trans, rgba) -> Part:
    return Part(name, body, verts @ rot.T + trans, tris, np.broadcast_to(np.asarray(rgba), (len(tris), 4)), True)


def _z_to(d: np.ndarray) -> np.ndarray:
    """A rotation taking ``z`` to the direction of ``d``."""
    z = d / np.linalg.norm(d)
    a = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(a, z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)


__all__ = ["DEFAULT_MAX_TRIANGLES", "HULL_POINTS", "MIN_TRIANGLES", "Part", "Scene", "body_poses", "decimate",
           "hull_points", "primitive_mesh", "vertex_normals"]
