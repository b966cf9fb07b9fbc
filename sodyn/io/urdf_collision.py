"""URDF ``<collision>`` geometry and SRDF ``<disable_collisions>``/``<group_state>`` for
:func:`sodyn.io.load_urdf`.

* **Shapes.**  ``<box size>`` (full lengths → half-sizes), ``<sphere radius>``,
  ``<cylinder radius length>`` and ``<capsule radius length>`` (``length`` of the cylindrical
  part; both along the shape's ``z``) → MuJoCo-sized :class:`sodyn.Geoms`, placed by
  ``<origin xyz rpy>`` in the link frame; a link merged through fixed joints hands its geoms
  to the moving body with the composed pose.  ``<mesh filename scale>`` becomes a ``"mesh"``
  geom, the convex hull of the file's vertices times ``scale`` in the ``<origin>`` frame
  (:mod:`sodyn.io.meshes`: file search path, hull, optional vertex cap); with
  ``meshes=False`` mesh shapes are reported, not modelled.  A geom is named
  ``<collision name>`` when given and unique, else ``<link>:<i>`` (``i`` its index among the
  link's ``<collision>`` elements).
* **Self-collision** with MuJoCo's bitmasks: robot geoms have ``contype=2, conaffinity=1`` by
  default, so they collide with geoms of the default ``contype = conaffinity = 1`` (terrain,
  free objects) but not with each other; with ``self_collision=True`` they are ``1, 1`` and the
  usual URDF convention holds: a link never collides with its parent (``filter_parent``; for a
  fixed base, the links welded to the world are excluded from their moving children too),
  except a link on a ``floating`` joint, an object free of its parent.
* **SRDF** (a path or an XML string): each ``<disable_collisions link1 link2>`` becomes an
  exclusion between the bodies carrying the two links (a link merged through fixed joints
  stands for its moving body); each ``<group_state>`` becomes a named keyframe
  (:func:`srdf_keyframes`, Pinocchio's ``loadReferenceConfigurations`` conventions).
"""

from __future__ import annotations

import dataclasses
import warnings

import jax.numpy as jnp
import numpy as np

from sodyn.io import _xml, diagnostics, meshes
from sodyn.model_builder import ModelBuilder
from sodyn.model_data import Keyframes
from sodyn.rotations import rpy_to_matrix

#: ``contype``/``conaffinity`` of robot geoms without and with self-collision.
ROBOT_MASKS = {False: (2, 1), True: (1, 1)}


@dataclasses.dataclass
class CollisionGeom:
    name: str
    link: str
    type: str
    size: np.ndarray | None
    rotation: np.ndarray
    translation: np.ndarray
    hull: meshes.Hull | None = None


@dataclasses.dataclass(frozen=True)
class MeshOptions:
    """How ``<mesh>`` shapes load: ``base_dir`` (the URDF's directory, ``None`` for a string),
    ``package_dirs`` and ``max_vertices`` (:mod:`sodyn.io.meshes`)."""

    base_dir: object = None
    package_dirs: object = None
    max_vertices: int | None = None


def _mesh(doc: _xml.Document, el, options: MeshOptions) -> meshes.Hull:
    """The hull of a ``<mesh filename scale>``; errors name the element and its line."""
    filename = el.get("filename")
    if not filename:
        raise doc.error(el, "<mesh> without a filename")
    scale = doc.floats(el, "scale", 3, (1.0, 1.0, 1.0))
    try:
        path = meshes.resolve_mesh_path(filename, options.base_dir, options.package_dirs)
        return meshes.mesh_hull(path, scale, options.max_vertices)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{doc.where(el)}: {e}") from None
    except ValueError as e:
        raise type(e)(f"{doc.where(el)}: {e} (load_urdf(..., meshes=False) skips mesh shapes)") from None


def _positive(doc: _xml.Document, el, attr: str) -> float:
    v = doc.float(el, attr)
    if v <= 0:
        raise doc.error(el, f"{attr} must be positive, got {v}")
    return v


def _shape(doc: _xml.Document, el) -> tuple[str, np.ndarray]:
    """``(type, MuJoCo size)`` of a ``<geometry>`` child."""
    if el.tag == "box":
        size = doc.floats(el, "size", 3)
        if np.any(size <= 0):
            raise doc.error(el, f"box size must be positive, got {size}")
        return "box", 0.5 * size
    if el.tag == "sphere":
        return "sphere", np.array([_positive(doc, el, "radius"), 0.0, 0.0])
    if el.tag in ("cylinder", "capsule"):
        r, length = _positive(doc, el, "radius"), doc.float(el, "length")
        if length < 0 or (el.tag == "cylinder" and length == 0):
            raise doc.error(el, f"{el.tag} length must be {'positive' if el.tag == 'cylinder' else 'non-negative'}, "
                            f"got {length}")
        return el.tag, np.array([r, 0.5 * length, 0.0])
    raise doc.error(el, f"unknown collision geometry <{el.tag}>; expected box, sphere, cylinder, capsule or mesh")


def single_shape(doc: _xml.Document, el, link: str):
    """The one shape element of a link's ``<collision>`` or ``<visual>`` ``el``; an error naming
    the link and the line otherwise."""
    geometry = el.find("geometry")
    shapes = [] if geometry is None else list(geometry)
    if len(shapes) != 1:
        raise doc.error(el, f"link {link!r}: <{el.tag}> needs a <geometry> with exactly one shape")
    return shapes[0]


def origin_pose(doc: _xml.Document, el) -> tuple[np.ndarray, np.ndarray]:
    """``(rpy, xyz)`` of the ``<origin>`` of ``el`` (zeros when it has none)."""
    origin = el.find("origin")
    if origin is None:
        return np.zeros(3), np.zeros(3)
    return doc.floats(origin, "rpy", 3, (0.0, 0.0, 0.0)), doc.floats(origin, "xyz", 3, (0.0, 0.0, 0.0))


def parse_collisions(doc: _xml.Document, robot, mesh_options: MeshOptions | None = None
                     ) -> tuple[list[CollisionGeom], list[str]]:
    """The ``<collision>`` shapes of every link, and the links with a mesh shape left out
    (every mesh when ``mesh_options`` is ``None``)."""
    out: list[CollisionGeom] = []
    skipped: list[str] = []
    used: set[str] = set()
    for link in robot.findall("link"):
        lname = link.get("name")
        for i, col in enumerate(link.findall("collision")):
            shape = single_shape(doc, col, lname)
            hull = None
            if shape.tag == "mesh" and mesh_options is None:
                if lname not in skipped:
                    skipped.append(lname)
                continue
            if shape.tag == "mesh":
                kind, size, hull = "mesh", None, _mesh(doc, shape, mesh_options)
            else:
                kind, size = _shape(doc, shape)
            rpy, xyz = origin_pose(doc, col)
            name = col.get("name")
            name = name if name and name not in used else f"{lname}:{i}"
            used.add(name)
            out.append(CollisionGeom(name, lname, kind, size, rpy_to_matrix(rpy), xyz, hull))
    return out, skipped


def add_collisions(b: ModelBuilder, index: dict[str, int], geoms: list[CollisionGeom],
                   self_collision: bool, world_links: set[str], world_children: list[str]) -> None:
    """Add the geoms with the robot's bitmasks; with self-collision, exclude the links welded
    to the world (``world_links``) from their moving children (``world_children``)."""
    contype, conaffinity = ROBOT_MASKS[bool(self_collision)]
    for g in geoms:
        b.add_geom(g.name, index[g.link], g.type, g.size, rotation=g.rotation, translation=g.translation,
                   contype=contype, conaffinity=conaffinity, vertices=g.hull)
    if self_collision and any(g.link in world_links for g in geoms):
        for child in world_children:
            b.add_contact_exclude(None, index[child])


def read_srdf(srdf) -> _xml.Document:
    """Parse an SRDF (a path or an XML string)."""
    text, source, _ = _xml.read_source(srdf, "SRDF")
    return _xml.parse(text, source)


def add_srdf(b: ModelBuilder, index: dict[str, int], doc: _xml.Document) -> None:
    """Exclusions from an SRDF's ``<disable_collisions link1 link2>``; ``ValueError`` naming
    the SRDF, the line and the link for a link the URDF does not have."""
    ignored = []
    for el in doc.root:
        if el.tag in ("disable_default_collisions", "enable_collisions"):
            ignored.append(doc.where(el))
        if el.tag != "disable_collisions":
            continue
        links = []
        for attr in ("link1", "link2"):
            name = el.get(attr)
            if name not in index:
                raise doc.error(el, f"{attr} {name!r} is not a link of the URDF")
            links.append(index[name])
        b.add_contact_exclude(*links)
    if ignored:
        warnings.warn(diagnostics.IgnoredElementWarning(
            "SRDF elements sodyn does not read (only <disable_collisions> and <group_state> are used):\n  "
            + "\n  ".join(ignored), tuple(ignored)), stacklevel=3)


def _joint_q(doc: _xml.Document, el, jtype: str, values: np.ndarray) -> np.ndarray:
    """sodyn ``q`` of one joint from an SRDF value in Pinocchio's convention: quaternions
    ``[x, y, z, w]`` (free: position first) → ``[w, x, y, z]``, normalised; a continuous or
    planar angle also as ``(cos θ, sin θ)``."""
    n = len(values)
    if jtype == "free" and n == 7:
        quat = values[[6, 3, 4, 5]]
        values = np.concatenate([values[:3], quat])
    elif jtype == "spherical" and n == 4:
        values = values[[3, 0, 1, 2]]
    elif jtype == "continuous" and n == 2:
        values = np.array([np.arctan2(values[1], values[0])])
    elif jtype == "planar" and n == 4:
        values = np.array([values[0], values[1], np.arctan2(values[3], values[2])])
    expected = {"free": 7, "spherical": 4, "planar": 3}.get(jtype, 1)
    if len(values) != expected:
        raise doc.error(el, f"a {jtype} joint takes {expected} value(s), got {n}")
    if jtype in ("free", "spherical"):
        quat = values[-4:]
        norm = np.linalg.norm(quat)
        if norm < 1e-12:
            raise doc.error(el, "the quaternion is zero")
        values = np.concatenate([values[:-4], quat / norm])
    return values


def srdf_keyframes(doc: _xml.Document, model, skip: tuple[str, ...] = (), strict: bool = False) -> Keyframes:
    """Each ``<group_state name><joint name value/>…`` as a keyframe called ``name``: ``q`` is
    the model's neutral configuration with the listed joints set (:func:`_joint_q` for the
    value conventions), ``v = 0``.  Joints the model does not have as movable joints are
    named in one :class:`~sodyn.io.diagnostics.IgnoredElementWarning` (with ``strict``: a
    ``ValueError`` naming the SRDF, the line and the joint), except those in ``skip``; a
    repeated state name keeps the first state (as Pinocchio does)."""
    names, qs, ignored = [], [], []
    for state in doc.root.iter("group_state"):
        name = state.get("name")
        if not name:
            raise doc.error(state, "<group_state> without a name")
        if name in names:
            ignored.append(f"{doc.where(state)} (a second state of that name)")
            continue
        q = np.array(model.q_neutral, dtype=np.float64)
        for el in state.findall("joint"):
            jname = el.get("name")
            if jname not in model.joint_names:
                if jname not in skip and strict:
                    raise doc.error(el, f"<group_state name={name!r}> sets joint {jname!r}, which is not a movable "
                                        "joint of the model")
                if jname not in skip:
                    ignored.append(f"{doc.where(el)} (not a movable joint of the model)")
                continue
            k = model.joint_names.index(jname)
            q[model.joint_q_slice(jname)] = _joint_q(doc, el, model.joint_types[k], doc.floats(el, "value"))
        names.append(name)
        qs.append(q)
    if ignored:
        warnings.warn(diagnostics.IgnoredElementWarning(
            f"{doc.source}: SRDF joint values sodyn does not use:\n  " + "\n  ".join(ignored), tuple(ignored)),
            stacklevel=3)
    dtype = model.q_neutral.dtype
    return Keyframes(q=jnp.asarray(np.array(qs).reshape(-1, model.nq), dtype),
                     v=jnp.zeros((len(names), model.nv), dtype), names=tuple(names))


def mesh_warning(source: str, links: list[str]) -> None:
    """One warning naming the links whose ``<collision>`` mesh was skipped (``meshes=False``)."""
    items = tuple(f"<link name={n!r}><collision><mesh>" for n in links)
    warnings.warn(diagnostics.UnsupportedElementWarning(
        f"{source}: mesh collision geometry skipped (meshes=False; these links lose it):\n  " + "\n  ".join(items),
        items), stacklevel=3)


__all__ = ["ROBOT_MASKS", "CollisionGeom", "MeshOptions", "add_collisions", "add_srdf", "mesh_warning",
           "parse_collisions", "read_srdf", "srdf_keyframes"]
