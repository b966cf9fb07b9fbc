"""URDF ``<collision>`` geometry and SRDF ``<disable_collisions>`` for :func:`sodyn.io.load_urdf`.

* **Shapes.**  ``<box size>`` (full lengths → half-sizes), ``<sphere radius>``,
  ``<cylinder radius length>`` and ``<capsule radius length>`` (``length`` of the cylindrical
  part; both along the shape's ``z``) → MuJoCo-sized :class:`sodyn.Geoms`, placed by
  ``<origin xyz rpy>`` in the link frame; a link merged through fixed joints hands its geoms
  to the moving body with the composed pose.  ``<mesh>`` is reported, not modelled.
  A geom is named ``<collision name>`` when given and unique, else ``<link>:<i>`` (``i`` its
  index among the link's ``<collision>`` elements).
* **Self-collision** with MuJoCo's bitmasks: robot geoms have ``contype=2, conaffinity=1`` by
  default, so they collide with geoms of the default ``contype = conaffinity = 1`` (terrain,
  free objects) but not with each other; with ``self_collision=True`` they are ``1, 1`` and the
  usual URDF convention holds: a link never collides with its parent (``filter_parent``; for a
  fixed base, the links welded to the world are excluded from their moving children too),
  except a link on a ``floating`` joint, an object free of its parent.
* **SRDF** (a path or an XML string): each ``<disable_collisions link1 link2>`` becomes an
  exclusion between the bodies carrying the two links (a link merged through fixed joints
  stands for its moving body).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from sodyn.io import _xml, diagnostics
from sodyn.model import ModelBuilder
from sodyn.rotations import rpy_to_matrix

#: ``contype``/``conaffinity`` of robot geoms without and with self-collision.
ROBOT_MASKS = {False: (2, 1), True: (1, 1)}


@dataclasses.dataclass
class CollisionGeom:
    name: str
    link: str
    type: str
    size: np.ndarray
    rotation: np.ndarray
    translation: np.ndarray


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


def parse_collisions(doc: _xml.Document, robot) -> tuple[list[CollisionGeom], list[str]]:
    """The primitive ``<collision>`` shapes of every link, and the links with a mesh shape."""
    out: list[CollisionGeom] = []
    meshes: list[str] = []
    used: set[str] = set()
    for link in robot.findall("link"):
        lname = link.get("name")
        for i, col in enumerate(link.findall("collision")):
            geometry = col.find("geometry")
            shapes = [] if geometry is None else list(geometry)
            if len(shapes) != 1:
                raise doc.error(col, f"link {lname!r}: <collision> needs a <geometry> with exactly one shape")
            if shapes[0].tag == "mesh":
                if lname not in meshes:
                    meshes.append(lname)
                continue
            kind, size = _shape(doc, shapes[0])
            origin = col.find("origin")
            xyz, rpy = np.zeros(3), np.zeros(3)
            if origin is not None:
                xyz = doc.floats(origin, "xyz", 3, (0.0, 0.0, 0.0))
                rpy = doc.floats(origin, "rpy", 3, (0.0, 0.0, 0.0))
            name = col.get("name")
            name = name if name and name not in used else f"{lname}:{i}"
            used.add(name)
            out.append(CollisionGeom(name, lname, kind, size, rpy_to_matrix(rpy), xyz))
    return out, meshes


def add_collisions(b: ModelBuilder, index: dict[str, int], geoms: list[CollisionGeom],
                   self_collision: bool, world_links: set[str], world_children: list[str]) -> None:
    """Add the geoms with the robot's bitmasks; with self-collision, exclude the links welded
    to the world (``world_links``) from their moving children (``world_children``)."""
    contype, conaffinity = ROBOT_MASKS[bool(self_collision)]
    for g in geoms:
        b.add_geom(g.name, index[g.link], g.type, g.size, rotation=g.rotation, translation=g.translation,
                   contype=contype, conaffinity=conaffinity)
    if self_collision and any(g.link in world_links for g in geoms):
        for child in world_children:
            b.add_contact_exclude(None, index[child])


def add_srdf(b: ModelBuilder, index: dict[str, int], srdf) -> None:
    """Exclusions from an SRDF's ``<disable_collisions link1 link2>``; ``ValueError`` naming
    the SRDF, the line and the link for a link the URDF does not have."""
    text, source, _ = _xml.read_source(srdf, "SRDF")
    doc = _xml.parse(text, source)
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
            "SRDF elements sodyn does not read (only <disable_collisions> is used):\n  " + "\n  ".join(ignored),
            tuple(ignored)), stacklevel=3)


def mesh_warning(source: str, links: list[str]) -> None:
    """One warning naming the links whose ``<collision>`` is a mesh."""
    items = tuple(f"<link name={n!r}><collision><mesh>" for n in links)
    warnings.warn(diagnostics.UnsupportedElementWarning(
        f"{source}: sodyn does not model mesh collision geometry (these links lose it):\n  " + "\n  ".join(items),
        items), stacklevel=3)


__all__ = ["ROBOT_MASKS", "CollisionGeom", "add_collisions", "add_srdf", "mesh_warning", "parse_collisions"]
