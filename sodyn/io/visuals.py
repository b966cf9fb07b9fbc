"""Visual geometry: what a robot looks like, as opposed to what it collides with.

:func:`load_visuals` reads a model's visual shapes into :class:`Visual` records, each a shape
(a triangle mesh or a primitive) with its pose in a model frame and its colour:

* **URDF** (:func:`urdf_visuals`): every ``<link><visual>``: ``<geometry>`` one of ``<mesh
  filename scale>``, ``<box size>``, ``<sphere radius>``, ``<cylinder radius length>``,
  ``<capsule radius length>``; ``<origin xyz rpy>`` its pose in the link frame; the colour from
  the mesh file's own materials (per face, e.g. COLLADA's), else the ``<material>`` (inline
  ``<color rgba>`` or a material defined at the top of the file), else :data:`DEFAULT_RGBA`.
  Mesh files are found as :func:`sodyn.load_urdf` finds them (``package://`` through
  :func:`sodyn.io.meshes.resolve_mesh_path`, ``package_dirs`` first) and read by
  :func:`sodyn.io.meshes.load_mesh` (COLLADA units applied, ``scale`` per axis; a mirroring
  ``scale`` reverses the triangles' winding, so that their normals stay outward).  The frame of
  a visual is its link's name, a frame of the model :func:`sodyn.load_urdf` builds.
* **MJCF** (:func:`mjcf_visuals`): the geoms of MuJoCo's compiled model whose ``group`` is in
  ``groups`` (MuJoCo's viewer shows groups 0, 1 and 2 by default; models that split visual
  and collision geoms put the collision ones in group 3) and whose alpha is not zero: plane,
  sphere, capsule, ellipsoid, cylinder, box (sizes as MuJoCo's ``geom_size``) and mesh
  (``mesh_vert``/``mesh_face`` in the geom frame, as MuJoCo compiled them); height fields are
  left out.  The pose is ``geom_pos``/``geom_quat`` in the body frame; the colour is
  ``geom_rgba``, or the material's ``mat_rgba`` where a material is set and the geom's rgba is
  MuJoCo's default (MuJoCo's rule).  The frame is the body's name (``body<i>`` for an unnamed
  body, as :func:`sodyn.load_mjcf` names it), ``None`` for the world body.

Primitive sizes follow :class:`sodyn.Geoms` (MuJoCo's): box half-sizes, sphere ``(r, ·, ·)``,
cylinder and capsule ``(r, half-length, ·)`` along ``z``, ellipsoid semi-axes, plane
``(half-x, half-y, ·)`` (``0``: unbounded) with normal ``z``.  Meshes are kept at full
resolution here; :mod:`sodyn.viewer` decimates them for drawing.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib

import numpy as np

from sodyn.io import _xml, meshes
from sodyn.io.urdf_collision import origin_pose, single_shape
from sodyn.rotations import quat_to_matrix, rpy_to_matrix

#: Colour of a visual that names none (RGBA in [0, 1]).
DEFAULT_RGBA = (0.72, 0.72, 0.75, 1.0)
#: MuJoCo's default geom rgba (a material's colour applies only where the geom keeps it).
MUJOCO_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
#: MJCF geom groups drawn by default (those MuJoCo's viewer shows).
DEFAULT_GROUPS = (0, 1, 2)
PRIMITIVES = ("box", "sphere", "cylinder", "capsule", "ellipsoid", "plane")


@dataclasses.dataclass(frozen=True, eq=False)
class Visual:
    """One visual shape.

    ``frame``: the model frame it moves with (``None``: fixed in the world); ``kind``: ``"mesh"``
    or one of :data:`PRIMITIVES`; ``size (3,)``: the primitive's MuJoCo size (zeros for a mesh);
    ``rotation (3, 3)``, ``translation (3,)``: its pose in ``frame``; ``rgba (4,)``: its colour;
    ``vertices (n, 3)`` and ``triangles (m, 3)``: a mesh's triangles in the shape's own frame
    (``None`` for a primitive); ``face_rgba (m, 4)``: per-face colours from the mesh file, or
    ``None``; ``source``: the mesh file (or MuJoCo mesh name), for messages."""

    name: str
    frame: str | None
    kind: str
    size: np.ndarray
    rotation: np.ndarray
    translation: np.ndarray
    rgba: np.ndarray
    vertices: np.ndarray | None = None
    triangles: np.ndarray | None = None
    face_rgba: np.ndarray | None = None
    source: str | None = None

    @property
    def n_triangles(self) -> int:
        """Triangles of a mesh (0 for a primitive)."""
        return 0 if self.triangles is None else int(len(self.triangles))


def load_visuals(source, *, package_dirs=None, groups=DEFAULT_GROUPS) -> tuple[Visual, ...]:
    """The visual shapes of a model file (module docstring).

    ``source``: a ``.urdf`` path or URDF XML string, an MJCF ``.xml`` path or XML string, a
    compiled ``mujoco.MjModel``, or an object with ``urdf`` and ``package_dirs`` attributes
    (:class:`sodyn.io.robot_data.ExampleRobot`).  ``package_dirs`` is searched first for
    ``package://`` meshes (URDF); ``groups`` are the MJCF geom groups drawn.
    **Raises** ``FileNotFoundError`` for a missing model or mesh file, ``ValueError`` for a
    malformed element (naming the file, element and line)."""
    if hasattr(source, "urdf") and hasattr(source, "package_dirs"):
        extra = [] if package_dirs is None else \
            [package_dirs] if isinstance(package_dirs, (str, os.PathLike)) else list(package_dirs)
        return urdf_visuals(source.urdf, package_dirs=[*extra, *source.package_dirs])
    if type(source).__name__ == "MjModel":
        return mjcf_visuals(source, groups=groups)
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if _xml.looks_like_xml(text):
            root_tag = text.lstrip("\ufeff \t\r\n")
            if root_tag.startswith("<?xml"):
                root_tag = root_tag[root_tag.find("?>") + 2:].lstrip()
            return mjcf_visuals(text, groups=groups) if root_tag.startswith("<mujoco") else \
                urdf_visuals(text, package_dirs=package_dirs)
        if text.lower().endswith(".urdf"):
            return urdf_visuals(source, package_dirs=package_dirs)
        if text.lower().endswith(".xml"):
            return mjcf_visuals(source, groups=groups)
    raise TypeError(f"load_visuals: expected a .urdf or MJCF .xml path, an XML string, a mujoco.MjModel or an "
                    f"ExampleRobot, got {source!r}")


# ---------------------------------------------------------------------------
# URDF
# ---------------------------------------------------------------------------


def _rgba(doc: _xml.Document, material) -> np.ndarray | None:
    color = None if material is None else material.find("color")
    return None if color is None else np.clip(doc.floats(color, "rgba", 4), 0.0, 1.0)


def urdf_visuals(path_or_xml, package_dirs=None) -> tuple[Visual, ...]:
    """The ``<visual>`` shapes of a URDF (module docstring); visual ``i`` of link ``L`` is
    named ``<visual name>`` when given, else ``L:i``."""
    text, source, path = _xml.read_source(path_or_xml, "URDF")
    doc = _xml.parse(text, source)
    robot = doc.root
    if robot.tag != "robot":
        raise doc.error(robot, f"the root element is <{robot.tag}>, expected <robot>")
    named = {m.get("name"): _rgba(doc, m) for m in robot.findall("material") if m.get("name")}
    base_dir = None if path is None else path.parent
    out: list[Visual] = []
    for link in robot.findall("link"):
        lname = link.get("name")
        for i, vis in enumerate(link.findall("visual")):
            shape = single_shape(doc, vis, lname)
            rpy, xyz = origin_pose(doc, vis)
            material = vis.find("material")
            rgba = _rgba(doc, material)
            if rgba is None and material is not None:
                rgba = named.get(material.get("name"))
            rgba = np.asarray(DEFAULT_RGBA if rgba is None else rgba, np.float64)
            name = vis.get("name") or f"{lname}:{i}"
            common = dict(name=name, frame=lname, rotation=rpy_to_matrix(rpy), translation=xyz, rgba=rgba)
            if shape.tag == "mesh":
                filename = shape.get("filename")
                if not filename:
                    raise doc.error(shape, "<mesh> without a filename")
                scale = doc.floats(shape, "scale", 3, (1.0, 1.0, 1.0))
                try:
                    file = meshes.resolve_mesh_path(filename, base_dir, package_dirs)
                    mesh = meshes.load_mesh(file, scale)
                except FileNotFoundError as e:
                    raise FileNotFoundError(f"{doc.where(shape)}: {e}") from None
                except ValueError as e:
                    raise ValueError(f"{doc.where(shape)}: {e}") from None
                mirror = np.prod(scale) < 0  # reversed winding keeps the faces outward
                triangles = mesh.triangles[:, ::-1] if mirror else mesh.triangles
                out.append(Visual(kind="mesh", size=np.zeros(3), vertices=mesh.vertices, triangles=triangles,
                                  face_rgba=file_colours(file, len(mesh.triangles)), source=str(file), **common))
            else:
                kind, size = _urdf_shape(doc, shape)
                out.append(Visual(kind=kind, size=size, **common))
    return tuple(out)


def _urdf_shape(doc: _xml.Document, el) -> tuple[str, np.ndarray]:
    if el.tag == "box":
        return "box", 0.5 * np.abs(doc.floats(el, "size", 3))
    if el.tag == "sphere":
        return "sphere", np.array([doc.float(el, "radius"), 0.0, 0.0])
    if el.tag in ("cylinder", "capsule"):
        return el.tag, np.array([doc.float(el, "radius"), 0.5 * doc.float(el, "length"), 0.0])
    raise doc.error(el, f"unknown visual geometry <{el.tag}>; expected mesh, box, sphere, cylinder or capsule")


def file_colours(path, n_triangles: int) -> np.ndarray | None:
    """Per-face RGBA ``(n_triangles, 4)`` in [0, 1] from a mesh file's materials, in the
    triangle order of :func:`sodyn.io.meshes.load_mesh` (every scene node's geometry in the
    scene graph's order), or ``None`` when the file defines no colours (STL) or its face count
    differs from ``n_triangles``."""
    path = pathlib.Path(path)
    if path.suffix.lower() not in (".dae", ".obj", ".glb", ".gltf", ".ply", ".off", ".3mf"):
        return None
    stat = path.stat()
    colours = _file_colours(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    return colours if colours is not None and len(colours) == n_triangles else None


@functools.lru_cache(maxsize=256)
def _file_colours(path: str, mtime_ns: int, size: int) -> np.ndarray | None:
    del mtime_ns, size
    import trimesh

    try:
        loaded = trimesh.load(path, process=False)
    except Exception:  # noqa: BLE001 - the geometry loaded already; colours are optional
        return None
    parts = [loaded]
    if isinstance(loaded, trimesh.Scene):
        parts = [loaded.geometry[name] for _, name in map(loaded.graph.get, loaded.graph.nodes_geometry)]
    parts = [g for g in parts if isinstance(g, trimesh.Trimesh) and len(g.faces)]
    out, defined = [], False
    for g in parts:
        rgba = None
        visual = g.visual
        if getattr(visual, "kind", None) is not None:
            material = getattr(visual, "material", None)
            if material is not None and getattr(material, "main_color", None) is not None:
                rgba = np.broadcast_to(np.asarray(material.main_color, np.float64) / 255.0, (len(g.faces), 4))
            elif hasattr(visual, "face_colors"):
                rgba = np.asarray(visual.face_colors, np.float64) / 255.0
        defined |= rgba is not None
        out.append(np.broadcast_to(np.asarray(DEFAULT_RGBA), (len(g.faces), 4)) if rgba is None else rgba)
    if not defined or not out:
        return None
    colours = np.ascontiguousarray(np.concatenate(out))
    colours.flags.writeable = False
    return colours


# ---------------------------------------------------------------------------
# MJCF
# ---------------------------------------------------------------------------

_MJ_TYPES = {0: "plane", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}


def mjcf_visuals(path_or_xml_or_model, groups=DEFAULT_GROUPS) -> tuple[Visual, ...]:
    """The drawn geoms of an MJCF file, XML string or compiled ``mujoco.MjModel`` (module
    docstring); a geom is named by its name, else ``geom<i>``."""
    import mujoco

    mj = path_or_xml_or_model
    if not isinstance(mj, mujoco.MjModel):
        text = str(mj)
        if _xml.looks_like_xml(text):
            mj = mujoco.MjModel.from_xml_string(_xml.clean_text(text))
        else:
            _xml.check_path(text, "MJCF")
            mj = mujoco.MjModel.from_xml_path(text)
    obj = mujoco.mjtObj
    groups = set(int(g) for g in groups)
    out: list[Visual] = []
    for g in range(mj.ngeom):
        kind = _MJ_TYPES.get(int(mj.geom_type[g]))
        rgba = np.asarray(mj.geom_rgba[g], np.float64)
        mat = int(mj.geom_matid[g])
        if mat >= 0 and np.allclose(rgba, MUJOCO_DEFAULT_RGBA):
            rgba = np.asarray(mj.mat_rgba[mat], np.float64)
        if kind is None or int(mj.geom_group[g]) not in groups or rgba[3] <= 0:
            continue
        body = int(mj.geom_bodyid[g])
        frame = None if body == 0 else (mujoco.mj_id2name(mj, obj.mjOBJ_BODY, body) or f"body{body}")
        name = mujoco.mj_id2name(mj, obj.mjOBJ_GEOM, g) or f"geom{g}"
        vertices = triangles = source = None
        if kind == "mesh":
            m = int(mj.geom_dataid[g])
            va, vn = int(mj.mesh_vertadr[m]), int(mj.mesh_vertnum[m])
            fa, fn = int(mj.mesh_faceadr[m]), int(mj.mesh_facenum[m])
            vertices = np.array(mj.mesh_vert[va: va + vn], np.float64)
            triangles = np.array(mj.mesh_face[fa: fa + fn], np.int64)
            source = mujoco.mj_id2name(mj, obj.mjOBJ_MESH, m) or f"mesh{m}"
        out.append(Visual(name=name, frame=frame, kind=kind, size=np.array(mj.geom_size[g], np.float64),
                          rotation=quat_to_matrix(np.asarray(mj.geom_quat[g], np.float64)),
                          translation=np.array(mj.geom_pos[g], np.float64), rgba=rgba,
                          vertices=vertices, triangles=triangles, source=source))
    return tuple(out)


__all__ = ["DEFAULT_GROUPS", "DEFAULT_RGBA", "PRIMITIVES", "Visual", "file_colours", "load_visuals",
           "mjcf_visuals", "urdf_visuals"]
