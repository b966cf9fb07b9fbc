"""Mesh files, where to find them, and their convex hulls (the collision shape of a mesh geom).

**Reading** (:func:`load_mesh`).  STL, OBJ, DAE and the other formats trimesh reads.  A file
that holds a scene (several nodes, as COLLADA files often do) becomes one triangle mesh with
every node's transform applied.  COLLADA's ``<asset><unit meter>`` scale is applied, as
assimp (hence ROS tools and Pinocchio) applies it; its ``up_axis`` is ignored, as those tools
ignore it (the coordinates are read as the link's).  ``scale`` multiplies the coordinates
per axis (URDF's ``<mesh scale>``); materials and textures are not read.

**Finding** (:func:`resolve_mesh_path`).  ``package://pkg/rel`` (also written
``package:///pkg/rel``) is looked up, first existing file wins, in

1. each directory ``D`` of ``package_dirs``: ``D/pkg/rel``, or ``D/rel`` when ``D`` is
   itself called ``pkg`` (Pinocchio's ``package_dirs``: directories that hold packages);
2. the URDF's directory and each of its ancestors ``A``: ``A/rel`` when ``A`` is called
   ``pkg``, and ``A/pkg/rel`` (a sibling package);
3. each directory of the environment variable ``ROS_PACKAGE_PATH`` (as in 1.) and
   ``P/share/pkg/rel`` for each prefix ``P`` of ``AMENT_PREFIX_PATH``;
4. the ``share`` directory of the installed ``example-robot-data`` package
   (:func:`sodyn.io.robot_data.example_robot_data_share`).

A plain path is relative to the URDF's directory (the current directory for a URDF given
as a string); ``file://`` paths are read as plain paths.  A file not found raises
``FileNotFoundError`` naming the path, or for ``package://`` the package and the search path.

**Hulls** (:func:`convex_hull`).  The convex hull of the vertices (qhull, through
``scipy.spatial``, with trimesh's options ``QbB Pp Qt``).  Adjacent hull triangles that are
coplanar (the opposite vertex within ``1e-9`` of the hull's size of the other's plane) are
merged into one face, stored as the plane ``[n, d]`` with ``n`` the unit outward normal and
``d = max_v n·v`` over the hull vertices, so that ``n·x ≤ d`` holds inside.  A flat point set
(all points in one plane, e.g. a plane-like collision mesh) has no 3-D hull: MuJoCo rejects
such a mesh ("mesh has coplanar vertices, cannot compute convex hull"), and so does
:func:`convex_hull`, suggesting a thin box or plane geom instead.

**Vertex cap** (``max_vertices``; :func:`convex_hull` and :func:`mesh_hull` do not cap by
default, :func:`sodyn.load_urdf` caps at :data:`DEFAULT_MAX_HULL_VERTICES`).  The analogue of
MuJoCo's ``<mesh maxhullvert>``, in two halves over the hull vertices ``V``:

1. *coverage*: the extreme tetrahedron (the vertex ``a`` farthest from the centroid, ``b``
   farthest from ``a``, ``c`` farthest from the line ``ab``, ``d`` farthest from the plane
   ``abc``) and ``⌊max_vertices/2⌋`` vertices by farthest-point sampling (from ``a``, each next
   vertex the one farthest from those taken), so that the corners of the broad, nearly flat
   faces a body rests on are kept;
2. *deviation*: then repeatedly the vertex farthest beyond a face plane of the hull taken so
   far, ``v* = argmax_v max_f (n_f·v − d_f)``, until the taken hull has ``max_vertices``
   vertices (a vertex an addition leaves inside drops out, so a few more may be added).

The capped hull lies inside the full hull, and every full-hull vertex lies at most
``Hull.cap_error = max_v max_f (n_f·v − d_f)`` beyond the capped hull's face planes.  A cap
costs the narrow phase less (a model's hull arrays are padded to its largest hull, and plane
and polytope contacts scan every vertex) and moves the collision surface inward by up to
``cap_error``.  Deviation alone would fit curved parts first and leave a flat sole that is
uneven by less than ``cap_error`` with two or three vertices; coverage alone would leave
larger deviations.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import re

import numpy as np

#: Relative size (of the hull's bounding-box diagonal) below which two adjacent hull
#: triangles count as coplanar and are merged into one face.
COPLANAR_TOLERANCE = 1e-9
#: The hull vertex cap :func:`sodyn.load_urdf` applies unless told otherwise (module docstring).
DEFAULT_MAX_HULL_VERTICES = 64


@dataclasses.dataclass(frozen=True)
class Mesh:
    """A triangle mesh: ``vertices (n, 3)`` float64, ``triangles (m, 3)`` vertex indices."""

    vertices: np.ndarray
    triangles: np.ndarray


@dataclasses.dataclass(frozen=True)
class Hull:
    """A convex hull: ``vertices (n, 3)``; ``faces (f, 4)`` planes ``[n, d]`` (``n·x ≤ d``
    inside, coplanar triangles merged); ``triangles (m, 3)`` indices into ``vertices``, wound
    counter-clockwise seen from outside (for drawing); ``cap_error``: how far the discarded
    vertices lie beyond a capped hull's face planes (0 without a cap)."""

    vertices: np.ndarray
    faces: np.ndarray
    triangles: np.ndarray
    cap_error: float = 0.0

    @property
    def radius(self) -> float:
        """Bounding radius about the origin: ``max |v|``."""
        return float(np.max(np.linalg.norm(self.vertices, axis=1)))


class MeshError(ValueError):
    """A mesh that cannot be read or has no usable convex hull."""


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def load_mesh(path, scale=None) -> Mesh:
    """Read a mesh file into one :class:`Mesh` (module docstring), coordinates times ``scale``
    (a number or three per-axis factors).  ``FileNotFoundError`` naming the path when it is
    missing; :class:`MeshError` when it cannot be read or holds no triangles."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"mesh file not found: {str(path)!r}")
    stat = path.stat()
    mesh = _read(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if scale is None:
        return mesh
    s = np.broadcast_to(np.asarray(scale, np.float64), (3,))
    return Mesh(mesh.vertices * s, mesh.triangles)


@functools.lru_cache(maxsize=512)
def _read(path: str, mtime_ns: int, size: int) -> Mesh:
    """Read and cache one file (the cache key includes the modification time and size)."""
    del mtime_ns, size
    import trimesh

    try:
        loaded = trimesh.load(path, process=False, skip_materials=True)
    except Exception as e:  # noqa: BLE001 - trimesh raises many kinds; all mean "unreadable"
        raise MeshError(f"mesh file {path!r} cannot be read: {type(e).__name__}: {e}") from None
    parts = [(np.eye(4), loaded)]
    if isinstance(loaded, trimesh.Scene):  # every node's geometry, placed by the node's transform
        parts = [(t, loaded.geometry[name]) for t, name in map(loaded.graph.get, loaded.graph.nodes_geometry)]
    parts = [(t, g) for t, g in parts if isinstance(g, trimesh.Trimesh) and len(g.faces)]
    if not parts:
        raise MeshError(f"mesh file {path!r} holds no triangles")
    offsets = np.cumsum([0] + [len(g.vertices) for _, g in parts])
    vertices = np.concatenate([np.asarray(g.vertices, np.float64) @ t[:3, :3].T + t[:3, 3] for t, g in parts])
    triangles = np.concatenate([np.asarray(g.faces, np.int64) + o for (_, g), o in zip(parts, offsets)])
    if path.lower().endswith(".dae"):
        vertices *= _collada_unit(path)
    if not np.all(np.isfinite(vertices)):
        raise MeshError(f"mesh file {path!r} has non-finite vertex coordinates")
    vertices.flags.writeable = False
    triangles.flags.writeable = False
    return Mesh(vertices, triangles)


_UNIT = re.compile(rb"<unit\b[^>]*\bmeter\s*=\s*[\"']([^\"']+)[\"']")


def _collada_unit(path: str) -> float:
    """The ``meter`` attribute of a COLLADA file's ``<asset><unit>`` (1 when absent); the
    asset block comes first in the file, so only its head is read."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    m = _UNIT.search(head)
    try:
        unit = float(m.group(1)) if m else 1.0
    except ValueError:
        raise MeshError(f"mesh file {path!r}: <unit meter={m.group(1).decode(errors='replace')!r}> is "
                        "not a number") from None
    if not (np.isfinite(unit) and unit > 0):
        raise MeshError(f"mesh file {path!r}: <unit meter={unit}> must be positive")
    return unit


# ---------------------------------------------------------------------------
# finding
# ---------------------------------------------------------------------------


def _dirs(value) -> list[pathlib.Path]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    return [pathlib.Path(v) for v in value]


def _env_dirs(name: str) -> list[pathlib.Path]:
    return [pathlib.Path(p) for p in os.environ.get(name, "").split(os.pathsep) if p]


def package_search_path(base_dir=None, package_dirs=None) -> list[tuple[str, pathlib.Path]]:
    """The ``package://`` search path in order (module docstring) as ``(rule, directory)``
    pairs: ``rule`` is ``"package_dirs"``, ``"ancestor"``, ``"ROS_PACKAGE_PATH"``,
    ``"AMENT_PREFIX_PATH"`` or ``"example-robot-data"``."""
    from sodyn.io.robot_data import example_robot_data_share

    out = [("package_dirs", d) for d in _dirs(package_dirs)]
    if base_dir is not None:
        base = pathlib.Path(base_dir).absolute()
        out += [("ancestor", a) for a in (base, *base.parents)]
    out += [("ROS_PACKAGE_PATH", d) for d in _env_dirs("ROS_PACKAGE_PATH")]
    out += [("AMENT_PREFIX_PATH", d / "share") for d in _env_dirs("AMENT_PREFIX_PATH")]
    share = example_robot_data_share()
    if share is not None:
        out.append(("example-robot-data", share))
    return out


def resolve_mesh_path(filename: str, base_dir=None, package_dirs=None) -> pathlib.Path:
    """The file a URDF ``<mesh filename>`` names (module docstring for the rules); raises
    ``FileNotFoundError`` naming the path, or the package and the search path."""
    if filename.startswith("package://"):
        rest = filename[len("package://"):].lstrip("/")
        pkg, _, rel = rest.partition("/")
        if not pkg or not rel:
            raise FileNotFoundError(f"mesh {filename!r}: expected package://<package>/<path>")
        found_pkg = []
        for rule, d in package_search_path(base_dir, package_dirs):
            roots = [d / pkg]
            if d.name == pkg and rule in ("package_dirs", "ancestor", "ROS_PACKAGE_PATH"):
                roots.insert(0, d)  # the package directory itself
            for root in roots:
                if (root / rel).is_file():
                    return root / rel
                if root.is_dir():
                    found_pkg.append(root / rel)
        if found_pkg:
            raise FileNotFoundError(f"mesh {filename!r}: package {pkg!r} found, but the file is missing: "
                                    f"{str(found_pkg[0])!r}")
        where = "\n  ".join(f"{d} ({rule})" for rule, d in package_search_path(base_dir, package_dirs)
                             if rule != "ancestor")
        ancestors = f" and the ancestors of {str(pathlib.Path(base_dir).absolute())!r}" if base_dir is not None else ""
        raise FileNotFoundError(f"mesh {filename!r}: package {pkg!r} not found in the search path{ancestors}:\n  "
                                + (where or "(empty: pass package_dirs= or set ROS_PACKAGE_PATH)"))
    if "://" in filename and not filename.startswith("file://"):
        raise FileNotFoundError(f"mesh {filename!r}: only package://, file:// and plain paths are supported")
    path = pathlib.Path(filename.removeprefix("file://"))
    if not path.is_absolute():
        path = pathlib.Path(base_dir if base_dir is not None else ".").absolute() / path
    if not path.is_file():
        raise FileNotFoundError(f"mesh file not found: {str(path)!r}" + (f" (from {filename!r})"
                                                                         if str(path) != filename else ""))
    return path


# ---------------------------------------------------------------------------
# hulls
# ---------------------------------------------------------------------------


def convex_hull(points, max_vertices: int | None = None, *, what: str = "mesh") -> Hull:
    """The convex :class:`Hull` of ``points (n, 3)`` (module docstring), optionally capped at
    ``max_vertices`` (≥ 4) vertices.  :class:`MeshError` (naming ``what``) for fewer than four
    points, non-finite points, or a flat point set."""
    from scipy.spatial import ConvexHull, QhullError

    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise MeshError(f"{what}: vertices must have shape (n, 3), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise MeshError(f"{what}: vertices must be finite")
    if max_vertices is not None and (isinstance(max_vertices, bool) or int(max_vertices) != max_vertices
                                     or max_vertices < 4):
        raise ValueError(f"{what}: max_vertices must be an integer ≥ 4 (or None), got {max_vertices!r}")
    flat = MeshError(f"{what} has coplanar vertices (all {len(p)} lie in one plane), so it has no convex hull "
                     "to collide with; use a thin box or a plane geom instead")
    if len(p) < 4:
        raise flat if len(p) == 3 else MeshError(f"{what} has {len(p)} vertices; a convex hull needs at least 4")
    try:
        hull = ConvexHull(p, qhull_options="QbB Pp Qt")
    except QhullError:
        raise flat from None
    full = None
    if max_vertices is not None and len(hull.vertices) > max_vertices:
        full = p[hull.vertices]
        try:
            hull = ConvexHull(full[_greedy_cap(full, int(max_vertices))], qhull_options="QbB Pp Qt")
        except QhullError:
            raise flat from None
    vertices = hull.points[hull.vertices]
    index = np.full(len(hull.points), -1)
    index[hull.vertices] = np.arange(len(hull.vertices))
    simplices = index[hull.simplices]
    tri = simplices.copy()
    size = float(np.linalg.norm(np.ptp(vertices, axis=0)))
    axes = np.linalg.svd(vertices - vertices.mean(0), full_matrices=False)[2]
    if np.min(np.ptp(vertices @ axes.T, axis=0)) <= 1e-12 * size:
        raise flat
    a, b, c = (vertices[tri[:, k]] for k in range(3))
    cross = np.cross(b - a, c - a)
    outward = np.einsum("ij,ij->i", cross, (a + b + c) / 3 - vertices.mean(0)) >= 0
    tri[~outward] = tri[~outward][:, [0, 2, 1]]
    cross[~outward] *= -1
    faces = _faces(vertices, simplices, cross, hull.neighbors, size)
    cap_error = 0.0
    if full is not None:
        cap_error = max(0.0, float(np.max(np.einsum("vk,fk->vf", full, faces[:, :3]) - faces[:, 3])))
    return Hull(vertices, faces, tri, cap_error)


def _faces(vertices, simplices, cross, neighbors, size) -> np.ndarray:
    """Face planes: adjacent triangles merged when each one's far vertex lies on the other's
    plane (within ``COPLANAR_TOLERANCE · size``); normal = area-weighted mean of the merged
    triangles' normals (slivers of area below ``1e-12 · size²`` dropped: they bound nothing);
    offset = its maximum over the vertices.  ``simplices``/``neighbors`` are qhull's
    (``neighbors[i, k]`` lies opposite ``simplices[i, k]``); ``cross`` the outward area vectors."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    area2 = np.linalg.norm(cross, axis=1)
    normal = cross / np.maximum(area2, np.finfo(float).tiny)[:, None]
    offset = np.einsum("ij,ij->i", normal, vertices[simplices[:, 0]])
    t = np.repeat(np.arange(len(simplices)), 3)
    u = neighbors.reshape(-1)
    far_t = simplices.reshape(-1)
    far_u = simplices[u, np.argmax(neighbors[u] == t[:, None], axis=1)]
    tol = COPLANAR_TOLERANCE * size
    same = ((np.abs(np.einsum("ij,ij->i", normal[t], vertices[far_u]) - offset[t]) <= tol)
            & (np.abs(np.einsum("ij,ij->i", normal[u], vertices[far_t]) - offset[u]) <= tol))
    graph = coo_matrix((np.ones(int(same.sum())), (t[same], u[same])), shape=(len(simplices),) * 2)
    n_faces, label = connected_components(graph, directed=False)
    n = np.zeros((n_faces, 3))
    np.add.at(n, label, cross)
    area2 = np.linalg.norm(n, axis=1)
    keep = area2 > 1e-12 * size**2
    n = n[keep] / area2[keep, None]
    vt = vertices.T
    step = max(1, (1 << 20) // len(vertices))
    d = np.concatenate([np.max(c[:, :1] * vt[0] + c[:, 1:2] * vt[1] + c[:, 2:] * vt[2], axis=1)
                        for c in (n[i: i + step] for i in range(0, len(n), step))])
    return np.concatenate([n, d[:, None]], axis=1)


def _extreme_simplex(points: np.ndarray) -> list[int]:
    """Four points spanning the set: farthest from the centroid, farthest from it, farthest
    from their line, farthest from the plane of the three."""
    a = int(np.argmax(np.linalg.norm(points - points.mean(0), axis=1)))
    b = int(np.argmax(np.linalg.norm(points - points[a], axis=1)))
    u = (points[b] - points[a]) / max(float(np.linalg.norm(points[b] - points[a])), np.finfo(float).tiny)
    rel = points - points[a]
    c = int(np.argmax(np.linalg.norm(rel - np.outer(rel @ u, u), axis=1)))
    normal = np.cross(points[b] - points[a], points[c] - points[a])
    d = int(np.argmax(np.abs(rel @ normal)))
    return [a, b, c, d]


def _farthest_points(points: np.ndarray, first: int, k: int) -> list[int]:
    """``k`` indices by farthest-point sampling from ``first``: each next point the one
    farthest from those taken."""
    taken = [first]
    dist = np.linalg.norm(points - points[first], axis=1)
    for _ in range(k - 1):
        nxt = int(np.argmax(dist))
        taken.append(nxt)
        dist = np.minimum(dist, np.linalg.norm(points - points[nxt], axis=1))
    return taken


def _greedy_cap(points: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` points of the capped hull (module docstring): the extreme simplex
    and ``k // 2`` farthest points, then repeatedly the point farthest beyond the taken hull's
    face planes (qhull's incremental hull, whose ``equations`` ``[n, o]`` hold ``n·x + o ≤ 0``
    inside)."""
    from scipy.spatial import ConvexHull

    simplex = _extreme_simplex(points)
    taken = list(dict.fromkeys(simplex + _farthest_points(points, simplex[0], max(k // 2, 1))))
    hull = ConvexHull(points[taken], incremental=True)
    size = float(np.linalg.norm(np.ptp(points, axis=0)))
    try:
        while len(hull.vertices) < k:
            eq = hull.equations
            gap = np.max(points @ eq[:, :3].T + eq[:, 3], axis=1)
            j = int(np.argmax(gap))
            if gap[j] <= COPLANAR_TOLERANCE * size:
                break
            hull.add_points(points[j: j + 1])
            taken.append(j)
        return np.asarray(taken)[hull.vertices]
    finally:
        hull.close()


def mesh_hull(path, scale=None, max_vertices: int | None = None) -> Hull:
    """:func:`convex_hull` of a mesh file's vertices (times ``scale``), cached per file,
    scale and cap (its arrays are read-only)."""
    path = pathlib.Path(path)
    load_mesh(path)  # errors for a missing or unreadable file
    stat = path.stat()
    s = tuple(np.broadcast_to(np.asarray(1.0 if scale is None else scale, np.float64), (3,)).tolist())
    return _file_hull(str(path.resolve()), stat.st_mtime_ns, stat.st_size, s, max_vertices, str(path))


@functools.lru_cache(maxsize=512)
def _file_hull(path: str, mtime_ns: int, size: int, scale: tuple, max_vertices, shown: str) -> Hull:
    mesh = _read(path, mtime_ns, size)
    hull = convex_hull(mesh.vertices * np.asarray(scale), max_vertices, what=f"mesh file {shown!r}")
    for a in (hull.vertices, hull.faces, hull.triangles):
        a.flags.writeable = False
    return hull


__all__ = ["COPLANAR_TOLERANCE", "DEFAULT_MAX_HULL_VERTICES", "Hull", "Mesh", "MeshError", "convex_hull",
           "load_mesh", "mesh_hull", "package_search_path", "resolve_mesh_path"]
