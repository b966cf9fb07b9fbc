"""URDF import: :func:`load_urdf`.

The file is parsed with the standard library (:mod:`xml.etree.ElementTree` elements built by
expat, so errors name the line); collision meshes are read with :mod:`sodyn.io.meshes`
(``package_dirs`` extends its search path, as in Pinocchio).  The resulting model matches
``pinocchio.buildModelFromUrdf`` (checked in ``tests/test_real_robots.py``):

* **Body / q / v order.**  Depth-first over the link tree from the root link; the children
  of a link are visited in the byte order of their *joint names* (what urdfdom, and hence
  Pinocchio, does: it stores joints in a ``std::map``).  So ``q``/``v`` follow Pinocchio's
  ordering, modulo the per-joint conventions of :mod:`sodyn.io.pinocchio` (continuous
  joints have ``nq = 1`` here).
* **Root link.**  Without ``floating_base`` the root link is welded to the world: it and
  every link fixed to it become world frames and their inertia is dropped (Pinocchio adds it
  to the immobile "universe").  With ``floating_base=True`` a free joint named
  ``root_joint`` (Pinocchio's default name) carries the root link.
* **Fixed joints** are merged into their parent body (inertia added); every link stays
  addressable as a frame, and each fixed joint also becomes a frame (at its child link) when
  its name is not already a link name — like Pinocchio's ``FIXED_JOINT`` frames.  Movable
  joint names resolve to their child link's frame through :meth:`Model.frame_id`.
* **Inertia.**  ``<inertial><origin xyz rpy>`` gives the centre of mass (``xyz``) and the
  orientation of the inertia axes: the rotational inertia in the link frame is
  ``R(rpy) I R(rpy)ᵀ``.  A link *without* ``<inertial>`` is massless, as in Pinocchio (a
  massless leaf on a movable joint makes ``M`` singular, as it does in Pinocchio).  An
  ``<inertial>`` lacking ``<mass>`` or ``<inertia>`` is an error unless
  ``missing_inertia="zero"`` (then the missing part is zero).  A massless link may carry a
  rotational inertia.  Negative masses and clearly negative principal moments are errors;
  round-off defects are repaired and non-physical but positive semi-definite inertias kept,
  with one warning per model (:mod:`sodyn.io.diagnostics`).
* **Joints.**  ``revolute``, ``continuous``, ``prismatic``, ``fixed``, ``floating`` (a free
  joint) and ``planar`` (the plane normal to ``<axis>``; a non-``z`` normal inserts a
  massless intermediate body named ``<child>__planar``).  Axes are normalised.  Limits
  (``lower``/``upper`` default to 0 inside a ``<limit>``, as the URDF specification and
  urdfdom say; no ``<limit>`` means unbounded; ``lower > upper``, which Pinocchio loads as
  written though no ``q`` satisfies it, leaves that joint's position unbounded with one
  :class:`~sodyn.io.diagnostics.InvalidLimitWarning`), ``velocity``/``effort`` limits and
  ``<dynamics damping friction>`` are kept as model data
  (``damping`` enters :func:`sodyn.inverse_dynamics` as ``damping · v``; Pinocchio's
  ``rnea`` leaves it out).
* **Mimic joints** (``mimic=``): ``"independent"`` (default, like Pinocchio) keeps them as
  ordinary joints; ``"reject"`` raises; ``"couple"`` returns a :class:`CoupledURDF`, the
  independent-joint model plus a :class:`MimicCoupling` with the linear maps
  ``q = A q_r + b`` and ``v = G v_r`` onto the independent coordinates (the engine itself
  has no mimic support; reduced dynamics are ``Gᵀ M G`` and ``Gᵀ τ``).

* **Collision.**  ``<collision>`` boxes, spheres, cylinders, capsules and meshes (their
  convex hulls, capped at :data:`~sodyn.io.meshes.DEFAULT_MAX_HULL_VERTICES` vertices unless
  ``max_hull_vertices`` says otherwise) become :class:`sodyn.Geoms`; self-collision is off
  unless ``self_collision=True``; an SRDF's ``<disable_collisions>`` become exclusions and its
  ``<group_state>`` poses keyframes (:mod:`sodyn.io.urdf_collision`).  A
  ``<disable_collisions>`` naming a link the URDF lacks is an error, or with
  ``srdf_unknown_links="ignore"`` is left out and named in one
  :class:`~sodyn.io.diagnostics.IgnoredElementWarning` (Pinocchio skips such pairs: an SRDF
  written for a larger robot of the same family names links a smaller one lacks).

* **Text.**  Like urdfdom (tinyxml), whitespace or blank lines before the XML declaration, a
  byte-order mark and the declared ``encoding`` (e.g. ISO-8859-1, UTF-16) are accepted
  (:func:`sodyn.io._xml.decode`); line numbers in errors stay those of the file.

Every error is a ``ValueError`` naming the file, the element and its line (bytes that do not
decode name the file too; a missing file raises ``FileNotFoundError``, a directory
``IsADirectoryError``); nothing half-built is returned.  A model whose mass matrix is singular
at every configuration loads with a :class:`~sodyn.io.diagnostics.SingularModelWarning`
(:func:`sodyn.io.diagnostics.warn_singular`).
"""

from __future__ import annotations

import dataclasses
import warnings

import equinox as eqx
import numpy as np

from sodyn.io import _xml, diagnostics, urdf_collision, urdf_mimic
from sodyn.io.meshes import DEFAULT_MAX_HULL_VERTICES
from sodyn.io.urdf_mimic import CoupledURDF, MimicCoupling
from sodyn.joints import JointSpec
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder
from sodyn.rotations import rpy_to_matrix

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


@dataclasses.dataclass
class _Link:
    name: str
    el: object
    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclasses.dataclass
class _Joint:
    name: str
    el: object
    type: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    velocity: float
    effort: float
    damping: float
    friction: float
    mimic: tuple[str, float, float] | None  # (joint, multiplier, offset)


def _parse_links(doc: _xml.Document, robot, missing_inertia: str) -> dict[str, _Link]:
    links: dict[str, _Link] = {}
    for el in robot.findall("link"):
        name = el.get("name")
        if not name:
            raise doc.error(el, "link without a name")
        if name in links:
            raise doc.error(el, f"duplicate link name {name!r} (first at line {doc.line(links[name].el)})")
        mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
        inertial = el.find("inertial")
        if inertial is not None:
            origin = inertial.find("origin")
            rot = np.eye(3)
            if origin is not None:
                com = doc.floats(origin, "xyz", 3, (0.0, 0.0, 0.0))
                rot = rpy_to_matrix(doc.floats(origin, "rpy", 3, (0.0, 0.0, 0.0)))
            m_el = inertial.find("mass")
            i_el = inertial.find("inertia")
            for sub, tag in ((m_el, "mass"), (i_el, "inertia")):
                if sub is None and missing_inertia != "zero":
                    raise doc.error(inertial, f"link {name!r}: <inertial> has no <{tag}> "
                                    "(pass missing_inertia='zero' to treat it as zero)")
            if m_el is not None:
                mass = doc.float(m_el, "value")
            if i_el is not None:
                ixx, iyy, izz = (doc.float(i_el, k, 0.0) for k in ("ixx", "iyy", "izz"))
                ixy, ixz, iyz = (doc.float(i_el, k, 0.0) for k in ("ixy", "ixz", "iyz"))
                local = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
                inertia = rot @ local @ rot.T
            if mass < 0:
                raise ValueError(f"{doc.where(m_el, f'of link {name!r}')}: mass must be non-negative, got {mass}")
            if i_el is not None and np.max(np.abs(inertia - inertia.T)) > 1e-9 * max(np.max(np.abs(inertia)), 1e-300):
                raise doc.error(i_el, f"link {name!r}: the inertia is not symmetric")
        links[name] = _Link(name, el, mass, com, inertia)
    return links


def _check_inertias(doc: _xml.Document, links: dict[str, _Link], strict: bool, keep_invalid: bool) -> None:
    """Classify every link inertia (:mod:`sodyn.io.diagnostics`): repair round-off in place,
    raise for impossible ones, and warn once for the model."""
    scale = diagnostics.inertia_scale([link.inertia for link in links.values()])
    repairs = []
    for link in links.values():
        inertial = link.el.find("inertial")
        if inertial is None:
            continue
        where = doc.where(inertial, f"of link {link.name!r}")
        link.inertia, defect = diagnostics.classify_inertia(link.name, where, link.inertia, scale, keep_invalid)
        if defect is not None:
            repairs.append(defect)
    if repairs:
        message = diagnostics.inertia_message(doc.source, repairs)
        if strict:
            raise ValueError(message.replace("(strict=True makes this an error)", "(strict=True)"))
        warnings.warn(diagnostics.InertiaWarning(message, tuple(repairs)), stacklevel=3)


def _parse_joints(doc: _xml.Document, robot, links, strict: bool = False) -> list[_Joint]:
    """The ``<joint>`` elements.  A ``<limit>`` with ``lower > upper`` (which Pinocchio loads as
    written, though no ``q`` satisfies it) loses its position bounds (``±inf``: the simulation
    applies no limit) with one :class:`~sodyn.io.diagnostics.InvalidLimitWarning` naming the
    joints; ``strict=True`` makes it an error."""
    joints: list[_Joint] = []
    inverted: list[str] = []
    inverted_names: list[str] = []
    seen: dict[str, object] = {}
    for el in robot.findall("joint"):
        name = el.get("name")
        if not name:
            raise doc.error(el, "joint without a name")
        if name in seen:
            raise doc.error(el, f"duplicate joint name {name!r} (first at line {doc.line(seen[name])})")
        seen[name] = el
        jtype = el.get("type")
        if jtype not in JOINT_TYPES:
            raise doc.error(el, f"unknown joint type {jtype!r}; expected one of {JOINT_TYPES}")
        ends = {}
        for tag in ("parent", "child"):
            sub = el.find(tag)
            if sub is None or not sub.get("link"):
                raise doc.error(el, f"joint {name!r} has no <{tag} link=...>")
            if sub.get("link") not in links:
                raise doc.error(sub, f"joint {name!r}: {tag} link {sub.get('link')!r} does not exist")
            ends[tag] = sub.get("link")
        origin = el.find("origin")
        xyz, rpy = np.zeros(3), np.zeros(3)
        if origin is not None:
            xyz = doc.floats(origin, "xyz", 3, (0.0, 0.0, 0.0))
            rpy = doc.floats(origin, "rpy", 3, (0.0, 0.0, 0.0))
        axis = np.array([1.0, 0.0, 0.0]) if jtype != "planar" else np.array([0.0, 0.0, 1.0])
        ax_el = el.find("axis")
        if ax_el is not None and jtype not in ("fixed", "floating"):
            axis = doc.floats(ax_el, "xyz", 3, axis)
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                raise doc.error(ax_el, f"joint {name!r}: the axis is zero")
            axis = axis / norm
        lower, upper, velocity, effort = -np.inf, np.inf, np.inf, np.inf
        lim = el.find("limit")
        if lim is not None:
            if jtype in ("revolute", "prismatic"):  # the URDF specification's defaults: 0
                lower, upper = doc.float(lim, "lower", 0.0), doc.float(lim, "upper", 0.0)
                if lower > upper:  # Pinocchio loads it; no q satisfies it, so it is left out
                    inverted.append(f"{doc.where(lim)}: joint {name!r}: lower limit {lower:g} exceeds upper "
                                    f"limit {upper:g}")
                    inverted_names.append(name)
                    lower, upper = -np.inf, np.inf
            if lim.get("velocity") is not None:
                velocity = doc.float(lim, "velocity")
            if lim.get("effort") is not None:
                effort = doc.float(lim, "effort")
        damping = friction = 0.0
        dyn = el.find("dynamics")
        if dyn is not None:
            damping = doc.float(dyn, "damping", 0.0)
            friction = doc.float(dyn, "friction", 0.0)
            if damping < 0 or friction < 0:
                raise doc.error(dyn, f"joint {name!r}: damping and friction must be non-negative")
        mimic = None
        mim = el.find("mimic")
        if mim is not None:
            if not mim.get("joint"):
                raise doc.error(mim, f"joint {name!r}: <mimic> without a joint")
            mimic = (mim.get("joint"), doc.float(mim, "multiplier", 1.0), doc.float(mim, "offset", 0.0))
        joints.append(_Joint(
            name, el, jtype, ends["parent"], ends["child"], rpy_to_matrix(rpy), xyz, axis,
            lower, upper, velocity, effort, damping, friction, mimic,
        ))
    if inverted:
        message = ("joint limits with lower > upper (position limits left out: the simulation applies none; "
                   "velocity and effort limits kept; strict=True makes this an error):\n  " + "\n  ".join(inverted))
        if strict:
            raise ValueError(inverted[0])
        warnings.warn(diagnostics.InvalidLimitWarning(f"{doc.source}: {message}", tuple(inverted_names)),
                      stacklevel=3)
    return joints


def _tree_order(doc: _xml.Document, robot, links, joints) -> tuple[str, list[_Joint]]:
    """Root link and joints in depth-first order (children by joint name, like urdfdom)."""
    parent_joint: dict[str, _Joint] = {}
    for j in joints:
        if j.child in parent_joint:
            other = parent_joint[j.child]
            raise doc.error(j.el, f"link {j.child!r} is the child of two joints, {other.name!r} "
                            f"(line {doc.line(other.el)}) and {j.name!r}")
        if j.child == j.parent:
            raise doc.error(j.el, f"joint {j.name!r} connects link {j.child!r} to itself (a cycle)")
        parent_joint[j.child] = j
    roots = [n for n in links if n not in parent_joint]
    if len(roots) > 1:
        where = ", ".join(f"{r!r} (line {doc.line(links[r].el)})" for r in roots[:6])
        raise doc.error(robot, f"the link tree has {len(roots)} roots: {where}; a URDF must have "
                        "exactly one root link")
    if not roots:
        j = joints[0]
        raise doc.error(j.el, "every link has a parent joint, so the joints form a cycle")
    children: dict[str, list[_Joint]] = {n: [] for n in links}
    for j in joints:
        children[j.parent].append(j)
    order: list[_Joint] = []
    stack = sorted(children[roots[0]], key=lambda j: j.name.encode(), reverse=True)
    reached = {roots[0]}
    while stack:
        j = stack.pop()
        order.append(j)
        reached.add(j.child)
        stack.extend(sorted(children[j.child], key=lambda j: j.name.encode(), reverse=True))
    if len(reached) != len(links):
        cyc = next(j for j in joints if j.child not in reached)
        raise doc.error(cyc.el, f"joint {cyc.name!r} is part of a cycle: link {cyc.child!r} cannot be "
                        f"reached from the root link {roots[0]!r}")
    return roots[0], order


def load_urdf(
    path_or_xml,
    floating_base: bool = False,
    package_dirs=None,
    mimic: str = "independent",
    missing_inertia: str = "error",
    *,
    root_joint_name: str = "root_joint",
    gravity=(0.0, 0.0, -9.81),
    dtype=None,
    strict: bool = False,
    invalid_inertia: str = "error",
    self_collision: bool = False,
    srdf=None,
    meshes: bool = True,
    max_hull_vertices: int | None = DEFAULT_MAX_HULL_VERTICES,
    srdf_unknown_links: str = "error",
) -> Model | CoupledURDF:
    """Load a URDF file (or XML string) into a :class:`sodyn.Model`; see the module docstring.

    ``floating_base`` puts a free joint (``root_joint_name``) under the root link;
    ``package_dirs`` (a directory or a list) is searched first for ``package://`` meshes
    (:mod:`sodyn.io.meshes` gives the whole search path); ``mimic`` is ``"independent"``,
    ``"couple"`` (returns :class:`CoupledURDF`) or ``"reject"``; ``missing_inertia`` is
    ``"error"`` or ``"zero"`` for an ``<inertial>`` that lacks ``<mass>`` or ``<inertia>``.

    Inertias are classified as :mod:`sodyn.io.diagnostics` describes: round-off defects are
    repaired and reported in one :class:`~sodyn.io.diagnostics.InertiaWarning` (an error
    with ``strict=True``); a clearly negative principal moment is an error unless
    ``invalid_inertia="keep"``, which loads it unchanged (as Pinocchio does) and reports it.
    A model whose mass matrix is singular (massless subtrees, a zero principal moment about a
    joint axis, a free joint duplicating a slider) loads with a
    :class:`~sodyn.io.diagnostics.SingularModelWarning` naming the joints.  A ``<limit>`` with
    ``lower > upper`` loads without position bounds for that joint and an
    :class:`~sodyn.io.diagnostics.InvalidLimitWarning` (an error with ``strict=True``).  A
    ``<mimic>`` naming no joint of the file is an error, except with ``mimic="independent"``
    and ``strict=False``, where mimic tags do not enter the model and it only warns
    (:class:`~sodyn.io.diagnostics.IgnoredElementWarning`).

    ``<collision>`` shapes become :class:`sodyn.Geoms` (:mod:`sodyn.io.urdf_collision`): robot
    geoms collide with default geoms (terrain, objects) but not with each other unless
    ``self_collision=True`` (then parent and child links do not collide); ``srdf`` (a path or
    an XML string) adds its ``<disable_collisions>`` pairs as exclusions and its
    ``<group_state>`` poses as :class:`sodyn.Keyframes` (a pose naming a joint the model lacks
    warns, with ``strict=True`` raises); ``srdf_unknown_links`` is
    ``"error"`` or ``"ignore"`` for a ``<disable_collisions>`` naming a link the URDF lacks
    (module docstring).  A ``<mesh>`` becomes a ``"mesh"`` geom, the convex hull of the file's
    vertices capped at ``max_hull_vertices`` vertices (default
    :data:`~sodyn.io.meshes.DEFAULT_MAX_HULL_VERTICES`, ``None``: the full hull; the cap as
    :mod:`sodyn.io.meshes` describes);
    a missing file raises ``FileNotFoundError`` naming it (or, for ``package://``, the
    package and the search path), an unreadable, empty or flat mesh ``ValueError``.  With
    ``meshes=False`` mesh shapes are skipped and named in one
    :class:`~sodyn.io.diagnostics.UnsupportedElementWarning`.
    """
    if mimic not in ("independent", "couple", "reject"):
        raise ValueError(f"mimic must be 'independent', 'couple' or 'reject', got {mimic!r}")
    if missing_inertia not in ("error", "zero"):
        raise ValueError(f"missing_inertia must be 'error' or 'zero', got {missing_inertia!r}")
    if invalid_inertia not in ("error", "keep"):
        raise ValueError(f"invalid_inertia must be 'error' or 'keep', got {invalid_inertia!r}")
    if srdf_unknown_links not in ("error", "ignore"):
        raise ValueError(f"srdf_unknown_links must be 'error' or 'ignore', got {srdf_unknown_links!r}")
    text, source, path = _xml.read_source(path_or_xml, "URDF")
    doc = _xml.parse(text, source)
    robot = doc.root
    if robot.tag != "robot":
        raise doc.error(robot, f"the root element is <{robot.tag}>, expected <robot>")
    links = _parse_links(doc, robot, missing_inertia)
    if not links:
        raise doc.error(robot, "the robot has no <link>")
    joints = _parse_joints(doc, robot, links, strict)
    urdf_mimic.check_mimic_targets(doc, joints, error=strict or mimic != "independent")
    root, order = _tree_order(doc, robot, links, joints)
    _check_inertias(doc, links, strict, invalid_inertia == "keep")
    if mimic == "reject":
        for j in order:
            if j.mimic is not None:
                raise doc.error(j.el.find("mimic"), f"joint {j.name!r} is a mimic joint (mimic='reject')")

    b = ModelBuilder(gravity=gravity, name=robot.get("name") or "robot")

    index: dict[str, int] = {}  # link -> builder index (the builder reads the name "world" as the world)

    def add(link: _Link, parent, spec, joint_name, **kw):
        parent = None if parent is None else index[parent]
        try:
            index[link.name] = b.add_body(link.name, parent, spec, mass=link.mass, com=link.com, inertia=link.inertia,
                       joint_name=joint_name, massless_ok=True, validate_inertia=False, **kw)
        except ValueError as e:
            raise doc.error(link.el, str(e)) from None

    r = links[root]
    add(r, None, JointSpec.free() if floating_base else JointSpec.fixed(),
        root_joint_name if floating_base else f"{root}__world")
    for j in order:
        child = links[j.child]
        kw = dict(rotation=j.rotation, translation=j.translation)
        if j.type in ("revolute", "continuous", "prismatic"):
            spec = {"revolute": JointSpec.revolute, "continuous": JointSpec.continuous,
                    "prismatic": JointSpec.prismatic}[j.type](j.axis)
            kw.update(damping=j.damping, friction=j.friction, velocity_limit=j.velocity,
                      effort_limit=j.effort)
            if j.type != "continuous":
                kw.update(lower=j.lower, upper=j.upper)
            add(child, j.parent, spec, j.name, **kw)
        elif j.type == "fixed":
            add(child, j.parent, JointSpec.fixed(), j.name, **kw)
        elif j.type == "floating":
            add(child, j.parent, JointSpec.free(), j.name, **kw)
        else:  # planar: the plane normal to the axis
            ra = _rotation_z_to(j.axis)
            if np.allclose(ra, np.eye(3)):
                add(child, j.parent, JointSpec.planar(), j.name, damping=j.damping, **kw)
            else:
                mid = f"{j.child}__planar"
                index[mid] = b.add_body(mid, index[j.parent], JointSpec.planar(), rotation=j.rotation @ ra,
                           translation=j.translation, mass=0.0, inertia=np.zeros((3, 3)),
                           joint_name=j.name, damping=j.damping, massless_ok=True)
                add(child, mid, JointSpec.fixed(), f"{j.name}__planar_fixed", rotation=ra.T)
    used = set(links)
    for j in order:
        if j.type == "fixed" and j.name not in used:
            b.add_frame(j.name, index[j.child])
            used.add(j.name)
    mesh_options = None
    if meshes:
        mesh_options = urdf_collision.MeshOptions(None if path is None else path.parent, package_dirs,
                                                  max_hull_vertices)
    geoms, skipped = urdf_collision.parse_collisions(doc, robot, mesh_options)
    world_links = set() if floating_base else {root}
    for j in order:  # the links welded to the world and the moving links below them
        if j.type == "fixed" and j.parent in world_links:
            world_links.add(j.child)
    world_children = [j.child for j in order
                      if j.parent in world_links and j.child not in world_links and j.type != "floating"]
    try:
        urdf_collision.add_collisions(b, index, geoms, self_collision, world_links, world_children)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None
    for j in order:  # a free-floating link is no neighbour of its parent: the parent filter skips it
        if j.type == "floating":
            b.set_weld_parent(index[j.child], None)
    srdf_doc = None if srdf is None else urdf_collision.read_srdf(srdf)
    if srdf_doc is not None:
        if srdf_unknown_links == "ignore":
            _drop_unknown_srdf_pairs(srdf_doc, index)
        urdf_collision.add_srdf(b, index, srdf_doc)  # its errors name the SRDF
    try:
        model = b.build(dtype=dtype, check_singular=False)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None
    if srdf_doc is not None:
        keyframes = urdf_collision.srdf_keyframes(srdf_doc, model, () if floating_base else (root_joint_name,),
                                                  strict=strict)
        model = eqx.tree_at(lambda m: m.keyframes, model, keyframes)
    if skipped:
        urdf_collision.mesh_warning(source, skipped)
    diagnostics.warn_singular(model, source, stacklevel=2)
    if mimic == "couple":
        return CoupledURDF(model, urdf_mimic.coupling(doc, model, order))
    return model


def _drop_unknown_srdf_pairs(doc: _xml.Document, links) -> None:
    """Remove from the SRDF ``doc`` each ``<disable_collisions>`` naming a link not in
    ``links``, naming them in one :class:`~sodyn.io.diagnostics.IgnoredElementWarning`."""
    dropped = []
    for el in list(doc.root):
        if el.tag != "disable_collisions":
            continue
        missing = [el.get(a) for a in ("link1", "link2") if el.get(a) not in links]
        if missing:
            dropped.append(f"{doc.where(el)} ({', '.join(map(repr, missing))}: not a link of the URDF)")
            doc.root.remove(el)
    if dropped:
        warnings.warn(diagnostics.IgnoredElementWarning(
            "SRDF <disable_collisions> pairs left out (srdf_unknown_links='ignore'):\n  "
            + "\n  ".join(dropped), tuple(dropped)), stacklevel=3)


def _rotation_z_to(axis: np.ndarray) -> np.ndarray:
    """A rotation taking ``e_z`` to the unit vector ``axis`` (identity if already ``e_z``)."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ axis)
    if c > 1 - 1e-12:
        return np.eye(3)
    if c < -1 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross(z, axis)
    s = np.linalg.norm(k)
    k = k / s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * K + (1 - c) * K @ K


__all__ = ["CoupledURDF", "MimicCoupling", "load_urdf"]
