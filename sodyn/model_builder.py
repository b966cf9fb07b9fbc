"""The :class:`ModelBuilder`: a model built in code, body by body, with its input checks.

Each ``add_*`` call checks its arguments at once (a ``ValueError`` naming the body, geom or
actuator) and records them; :meth:`ModelBuilder.build` hands the records to
:func:`sodyn.model_assembly.assemble_model`, which merges fixed joints, orders the bodies
depth-first and compiles the topology.  :func:`check_inertia` states which inertias a body may have.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sodyn.joints import JOINT_TYPES, KERNEL_OF, JointSpec, nq_of, nv_of
from sodyn.joints import neutral as joint_neutral
from sodyn.model import WORLD, Model
from sodyn.model_assembly import ActuatorRecord, BodyRecord, BuilderRecords, GeomRecord, assemble_model
from sodyn.model_data import DYNAMICS, Geoms, check_geom, check_height_field
from sodyn.rotations import as_rotation

#: The optional actuator parameters of :meth:`ModelBuilder.add_actuator` and their defaults
#: (:class:`~sodyn.model_data.Actuators`).
ACTUATOR_OPTIONS: dict[str, object] = {"gain_slope": (0.0, 0.0), "time_constant": 1.0,
                                       "act_range": (-np.inf, np.inf), "stall_force": np.inf, "back_emf": 0.0,
                                       "power_limit": np.inf, "dynamics": "none", "act_early": False}


def _vec(x, n: int, where: str, what: str) -> np.ndarray:
    """``x`` as ``n`` floats (a scalar repeated); a ``ValueError`` naming ``where`` and ``what``
    for another size or a NaN."""
    a = np.asarray(x, dtype=np.float64).reshape(-1) if np.ndim(x) else np.full(n, float(x))
    if a.shape != (n,):
        raise ValueError(f"{where}: {what} must have {n} entries, got shape {np.shape(x)}")
    if np.any(np.isnan(a)):
        raise ValueError(f"{where}: {what} contains NaN: {a}")
    return a


def check_inertia(
    mass: float, inertia: np.ndarray, where: str, massless_ok: bool = False, triangle: bool = True
) -> None:
    """Raise ``ValueError`` unless ``mass > 0`` and ``inertia`` is a physical rotational inertia.

    Physical means symmetric, positive semi-definite, and its principal moments satisfy the
    triangle inequality ``I₁ + I₂ ≥ I₃`` (skipped with ``triangle=False``, for mathematical
    fixtures that are not real bodies).  A zero mass is accepted only with ``massless_ok``;
    such a body may still carry a rotational inertia (its spatial inertia
    ``[[I, 0], [0, 0]]`` is positive semi-definite, as Pinocchio accepts it).
    """
    if not np.isfinite(mass):
        raise ValueError(f"{where}: mass must be finite, got {mass}")
    if mass < 0 or (mass == 0 and not massless_ok):
        raise ValueError(f"{where}: mass must be positive, got {mass}")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ValueError(f"{where}: inertia must be a finite 3x3 matrix")
    scale = max(np.max(np.abs(inertia)), 1e-300)
    if np.max(np.abs(inertia - inertia.T)) > 1e-9 * scale:
        raise ValueError(f"{where}: inertia is not symmetric:\n{inertia}")
    if not np.any(inertia):
        return
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    tol = 1e-9 * max(scale, 1e-12)
    if eig[0] < -tol:
        raise ValueError(f"{where}: inertia is not positive semi-definite (eigenvalues {eig})")
    if triangle and eig[0] + eig[1] < eig[2] - tol:
        raise ValueError(
            f"{where}: inertia violates the triangle inequality I1 + I2 >= I3 (principal moments {eig})"
        )


class ModelBuilder:
    """Programmatic model construction.

    Example::

        b = ModelBuilder()
        b.add_body("link1", parent=None, joint=JointSpec.revolute((0, 0, 1)),
                   translation=(0, 0, 0.1), mass=1.0, com=(0, 0, 0.2),
                   inertia=np.diag([0.01, 0.01, 0.001]))
        b.add_frame("tool", "link1", translation=(0, 0, 0.4))
        model = b.build()
    """

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, -9.81), name: str = "model", *,
                 filter_parent: bool = True):
        self.gravity = _vec(gravity, 3, "ModelBuilder", "gravity")
        self.name = name
        #: Geoms of a body and of its parent never collide (MuJoCo's default; see :class:`Geoms`).
        self.filter_parent = bool(filter_parent)
        self._bodies: list[BodyRecord] = []
        self._frames: list[tuple[str, int, np.ndarray, np.ndarray]] = []
        self._names: dict[str, int] = {}
        self._geoms: list[GeomRecord] = []
        self._geom_index: dict[str, int] = {}
        self._pairs: list[tuple[str, int, int, int, np.ndarray, float, float]] = []
        self._excludes: list[tuple[int, int]] = []
        self._weld_parent: dict[int, int] = {}
        self._actuators: list[ActuatorRecord] = []
        self._keyframes: list[tuple[str, np.ndarray, np.ndarray]] = []

    def _parent_index(self, parent, where: str) -> int:
        if isinstance(parent, str) and parent in self._names:  # a real body named "world" wins
            return self._names[parent]
        if parent is None or parent == "world" or (isinstance(parent, (int, np.integer)) and parent == WORLD):
            return WORLD
        if isinstance(parent, str):
            if parent not in self._names:
                raise ValueError(f"{where}: parent body {parent!r} does not exist (add parents before children)")
            return self._names[parent]
        if isinstance(parent, (int, np.integer)):
            if not 0 <= parent < len(self._bodies):
                raise ValueError(
                    f"{where}: parent index {parent} out of range; bodies so far: {len(self._bodies)} "
                    "(a parent must be added before its child, so cycles cannot be formed)"
                )
            return int(parent)
        raise TypeError(f"{where}: parent must be a body name, an index or None, got {type(parent).__name__}")

    def add_body(
        self,
        name: str,
        parent=None,
        joint: JointSpec | str = "revolute",
        *,
        rotation=None,
        translation=(0.0, 0.0, 0.0),
        mass: float = 1.0,
        com=(0.0, 0.0, 0.0),
        inertia=None,
        joint_name: str | None = None,
        damping=0.0,
        armature=0.0,
        friction=0.0,
        lower=None,
        upper=None,
        velocity_limit=np.inf,
        effort_limit=np.inf,
        stiffness=0.0,
        spring_reference=None,
        q_neutral=None,
        gravcomp: float = 0.0,
        massless_ok: bool = False,
        check_triangle_inequality: bool = True,
        validate_inertia: bool = True,
    ) -> int:
        """Add a body below ``parent`` (a name, an index, or ``None`` for the world).

        ``rotation``/``translation`` place the joint frame in the parent body's frame
        (``rotation`` is a 3×3 matrix or a ``[w, x, y, z]`` quaternion).  ``inertia`` is the
        rotational inertia about the centre of mass ``com``, in body axes (default: that of
        a unit solid sphere scaled by ``mass``).  The inertia must be physical (see
        :func:`check_inertia`); ``massless_ok`` admits a zero mass with zero inertia and
        ``check_triangle_inequality=False`` admits non-physical fixtures;
        ``validate_inertia=False`` skips the check entirely (for loaders that have already
        classified and reported the inertia).  ``stiffness`` (per dof) and
        ``spring_reference`` (per ``q``, default ``q_neutral``) describe a joint spring;
        ``q_neutral`` is the joint's neutral configuration (default: zero angles, identity
        quaternions).  ``gravcomp`` is the share of the body's weight that gravity compensation
        carries (MuJoCo's body ``gravcomp``: 1 floats the body).  Returns the body's index in
        the builder.
        """
        where = f"body {name!r}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"body name must be a non-empty string, got {name!r}")
        if name in self._names or any(f[0] == name for f in self._frames):
            raise ValueError(f"{where}: name already used")
        if isinstance(joint, str):
            joint = JointSpec(joint)
        if joint.type not in JOINT_TYPES:
            raise ValueError(f"{where}: unknown joint type {joint.type!r}; expected one of {JOINT_TYPES}")
        parent_idx = self._parent_index(parent, where)
        axis = _vec(joint.axis, 3, where, "joint axis")
        if joint.type in ("revolute", "continuous", "prismatic", "helical"):
            norm = np.linalg.norm(axis)
            if not np.isfinite(norm) or norm < 1e-12:
                raise ValueError(f"{where}: joint axis must be non-zero and finite, got {tuple(axis)}")
            axis = axis / norm
        joint = JointSpec(joint.type, tuple(axis), float(joint.pitch))
        mass = float(mass)
        if not np.isfinite(mass):
            raise ValueError(f"{where}: mass must be finite, got {mass}")
        inertia = (
            np.eye(3) * 0.4 * mass * 0.01 if inertia is None else np.asarray(inertia, dtype=np.float64)
        )
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        if validate_inertia:
            check_inertia(mass, inertia, where, massless_ok, check_triangle_inequality)
        elif mass < 0 or inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise ValueError(f"{where}: mass must be non-negative and inertia a finite 3x3 matrix")
        nq, nv = nq_of(joint.type), nv_of(joint.type)
        neutral = (np.zeros(0) if joint.type == "fixed" else joint_neutral(KERNEL_OF[joint.type]))
        neutral = neutral if q_neutral is None else _vec(q_neutral, nq, where, "q_neutral")
        spring_ref = neutral if spring_reference is None else _vec(spring_reference, nq, where, "spring reference")
        lower = np.full(nq, -np.inf) if lower is None else _vec(lower, nq, where, "lower limit")
        upper = np.full(nq, np.inf) if upper is None else _vec(upper, nq, where, "upper limit")
        if np.any(lower > upper):
            raise ValueError(f"{where}: lower limit {lower} exceeds upper limit {upper}")
        body = BodyRecord(
            name=name, parent=parent_idx, joint=joint, joint_name=joint_name or name,
            rotation=as_rotation(rotation, where),
            translation=_vec(translation, 3, where, "translation"),
            mass=mass, com=_vec(com, 3, where, "com"), inertia=0.5 * (inertia + inertia.T),
            damping=_vec(damping, nv, where, "damping"), armature=_vec(armature, nv, where, "armature"),
            friction=_vec(friction, nv, where, "friction"), lower=lower, upper=upper,
            velocity_limit=_vec(velocity_limit, nv, where, "velocity limit"),
            effort_limit=_vec(effort_limit, nv, where, "effort limit"),
            stiffness=_vec(stiffness, nv, where, "stiffness"), spring_reference=spring_ref,
            q_neutral=neutral, gravcomp=float(gravcomp),
        )
        if not np.isfinite(body.gravcomp):
            raise ValueError(f"{where}: gravcomp must be finite, got {gravcomp!r}")
        if np.any(body.damping < 0) or np.any(body.armature < 0):
            raise ValueError(f"{where}: damping and armature must be non-negative")
        if np.any(body.stiffness < 0):
            raise ValueError(f"{where}: stiffness must be non-negative")
        self._bodies.append(body)
        self._names[name] = len(self._bodies) - 1
        return len(self._bodies) - 1

    def add_frame(self, name: str, body, *, rotation=None, translation=(0.0, 0.0, 0.0)) -> None:
        """Add an operational frame attached to ``body`` (a name, index, or ``None`` = world)."""
        where = f"frame {name!r}"
        if name in self._names or any(f[0] == name for f in self._frames):
            raise ValueError(f"{where}: name already used")
        b = self._parent_index(body, where)
        self._frames.append((name, b, as_rotation(rotation, where), _vec(translation, 3, where, "translation")))

    def add_geom(self, name: str, body, type: str, size=None, *, rotation=None, translation=(0.0, 0.0, 0.0),
                 friction=(1.0, 0.005, 0.0001), contype: int = 1, conaffinity: int = 1, condim: int = 3,
                 margin: float = 0.0, gap: float = 0.0, priority: int = 0, vertices=None, elevation=None) -> int:
        """Add a collision geom on ``body`` (a name, an index, or ``None`` = world); returns its index.

        ``type`` is one of ``GEOM_TYPES``; ``size``, ``friction``, ``contype``, ``conaffinity``,
        ``condim``, ``margin``, ``gap`` and ``priority`` mean what they mean in MuJoCo
        (:class:`Geoms`; the defaults are MuJoCo's).  ``rotation``/``translation`` place it in
        the body's frame.  A ``"mesh"`` geom takes ``vertices (n, 3)`` in the geom frame (or a
        :class:`sodyn.io.meshes.Hull`) instead of ``size``: it is their convex hull
        (:func:`sodyn.io.meshes.convex_hull`), with ``size = (max |v|, 0, 0)``.  A ``"hfield"``
        geom takes ``elevation (nrow, ncol)`` (normalised to ``[0, 1]``) and
        ``size = (x, y, z_top, z_base)`` (:class:`sodyn.model_data.HeightFields`).  Raises
        ``ValueError`` naming the geom for a bad value.
        """
        where = f"geom {name!r}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"geom name must be a non-empty string, got {name!r}")
        if name in self._geom_index:
            raise ValueError(f"{where}: name already used")
        hull = hfield = None
        if elevation is not None and type != "hfield":
            raise ValueError(f"{where}: only a height field geom takes elevation, not a {type}")
        if type == "hfield":
            if size is None or elevation is None:
                raise ValueError(f"{where}: a height field geom needs elevation=(nrow, ncol) array and "
                                 "size=(x, y, z_top, z_base)")
            hfield = check_height_field(where, elevation, size)
            x, y, top, base = hfield[1]
            size = (x, y, max(top, base))
        elif type == "mesh":
            from sodyn.io.meshes import Hull, convex_hull

            if size is not None or vertices is None:
                raise ValueError(f"{where}: a mesh geom takes vertices= (its size is the hull's bounding radius)")
            hull = vertices if isinstance(vertices, Hull) else convex_hull(vertices, what=where)
            size = (hull.radius, 0.0, 0.0)
        elif vertices is not None:
            raise ValueError(f"{where}: only a mesh geom takes vertices, not a {type}")
        elif size is None:
            raise ValueError(f"{where}: a {type} geom needs a size")
        size = _vec(size, 3, where, "size")
        friction = _vec(friction, 3, where, "friction")
        static = check_geom(where, type, size, friction, contype=contype, conaffinity=conaffinity,
                            condim=condim, margin=margin, gap=gap, priority=priority)
        b = self._body_ref(body, where)
        pose = as_rotation(rotation, where), _vec(translation, 3, where, "translation")
        self._geoms.append(GeomRecord(name, type, b, *pose, size, friction, static, hull, hfield))
        self._geom_index[name] = len(self._geoms) - 1
        return len(self._geoms) - 1

    def add_contact_pair(self, geom1, geom2, *, name: str | None = None, condim: int = 3,
                         friction=(1.0, 0.005, 0.0001), margin: float = 0.0, gap: float = 0.0) -> None:
        """Add an explicit contact pair (MuJoCo's ``<contact><pair>``): the two geoms (names or
        indices) are always tested, whatever the body filters and bitmasks say, with these
        parameters (MuJoCo's pair defaults) instead of the geoms' combined ones; the dynamic
        pair of the same two geoms is dropped."""
        where = f"contact pair {name or (geom1, geom2)!r}"
        g1, g2 = (self._geom_id(g, where) for g in (geom1, geom2))
        if g1 == g2:
            raise ValueError(f"{where}: a geom cannot be paired with itself ({self._geoms[g1].name!r})")
        friction = _vec(friction, 3, where, "friction")
        static = check_geom(where, "sphere", np.ones(3), friction, condim=condim, margin=margin, gap=gap)
        self._pairs.append((name or f"pair{len(self._pairs)}", g1, g2, static["condim"], friction, static["margin"],
                            static["gap"]))

    def add_contact_exclude(self, body1, body2) -> None:
        """Geoms of ``body1`` and ``body2`` (names, indices, ``None``/``"world"``) never collide
        dynamically (MuJoCo's ``<exclude>``; explicit pairs still do).  A body merged into its
        moving ancestor (fixed joint) stands for that ancestor, so the whole weld body is excluded."""
        where = f"contact exclude ({body1!r}, {body2!r})"
        self._excludes.append((self._body_ref(body1, where), self._body_ref(body2, where)))

    def set_weld_parent(self, body, parent) -> None:
        """Make the parent filter (``filter_parent``) treat ``parent`` as ``body``'s parent: for
        loaders that split one source body into a chain of bodies (a MuJoCo body with several
        joints), so that the chain's parent, not the chain's previous link, is filtered."""
        where = f"weld parent of {body!r}"
        self._weld_parent[self._body_ref(body, where)] = self._body_ref(parent, where)

    def add_collision_from(self, geoms: Geoms, body_names: Sequence[str]) -> None:
        """Add a built model's collision data — geoms with all their fields, explicit pairs,
        excludes, ``filter_parent`` and weld parents — onto bodies named ``body_names[k]`` here
        (``geoms.body`` indexes ``body_names``): for code that rebuilds a model (``lock_joints``)."""
        name = lambda k: None if k == WORLD else body_names[k]  # noqa: E731
        arr = lambda x: np.asarray(x, np.float64)  # noqa: E731
        for i, n in enumerate(geoms.names):
            mesh, k = geoms.type[i] == "mesh", geoms.hfield_id[i]
            size = None if mesh else geoms.hfield.size[k] if k >= 0 else arr(geoms.size[i])
            self.add_geom(n, name(geoms.body[i]), geoms.type[i], size,
                          rotation=arr(geoms.rotation[i]), translation=arr(geoms.translation[i]),
                          friction=arr(geoms.friction[i]), contype=geoms.contype[i],
                          conaffinity=geoms.conaffinity[i], condim=geoms.condim[i], margin=float(geoms.margin[i]),
                          gap=float(geoms.gap[i]), priority=geoms.priority[i],
                          vertices=arr(geoms.vertices[i]) if mesh else None,
                          elevation=arr(geoms.hfield.field(k)) if k >= 0 else None)
        p = geoms.pairs
        for k in range(len(p)):
            self.add_contact_pair(geoms.names[p.geom1[k]], geoms.names[p.geom2[k]], name=p.names[k],
                                  condim=p.condim[k], friction=arr(p.friction[k]), margin=float(p.margin[k]),
                                  gap=float(p.gap[k]))
        for a, b in geoms.exclude:
            self.add_contact_exclude(name(a), name(b))
        self.filter_parent = geoms.filter_parent
        for k, w in enumerate(geoms.weld_parent):
            self.set_weld_parent(body_names[k], name(w))

    def _geom_id(self, geom, where: str) -> int:
        if isinstance(geom, str) and geom in self._geom_index:
            return self._geom_index[geom]
        if isinstance(geom, (int, np.integer)) and not isinstance(geom, bool) and 0 <= geom < len(self._geoms):
            return int(geom)
        raise ValueError(f"{where}: unknown geom {geom!r} (add geoms before pairs that name them)")

    def _body_ref(self, body, where: str) -> int:
        if isinstance(body, str) and body not in self._names and body != "world":
            raise ValueError(f"{where}: unknown body {body!r}")
        return self._parent_index(body, where)

    def add_actuator(self, name: str, joint: str, *, kind: str = "motor", gear: float = 1.0, gain: float = 1.0,
                     bias=(0.0, 0.0, 0.0), ctrl_range=(-np.inf, np.inf), force_range=(-np.inf, np.inf),
                     **options) -> None:
        """Add an actuator on the one-dof joint called ``joint`` (affine form of :class:`Actuators`;
        ``options``: the other fields of :class:`Actuators`, defaults :data:`ACTUATOR_OPTIONS`)."""
        where = f"actuator {name!r}"
        unknown = sorted(set(options) - set(ACTUATOR_OPTIONS))
        if unknown:
            raise ValueError(f"{where}: unknown actuator option {unknown[0]!r} (options: {sorted(ACTUATOR_OPTIONS)})")
        extra = {**ACTUATOR_OPTIONS, **options}
        if extra["dynamics"] not in DYNAMICS:
            raise ValueError(f"{where}: dynamics must be one of {DYNAMICS}, got {extra['dynamics']!r}")
        ranges = [_vec(r, 2, where, what) for r, what in ((ctrl_range, "ctrl range"), (force_range, "force range"),
                                                         (extra["act_range"], "act range"))]
        for r, what in zip(ranges, ("ctrl range", "force range", "act range")):
            if r[0] > r[1]:
                raise ValueError(f"{where}: {what} lower bound {r[0]} exceeds upper bound {r[1]}")
        if extra["dynamics"] in ("filter", "filterexact") and not float(extra["time_constant"]) > 0:
            raise ValueError(f"{where}: a filter needs a positive time_constant, got {extra['time_constant']!r}")
        extra.update(act_range=ranges[2], gain_slope=_vec(extra["gain_slope"], 2, where, "gain slope"),
                     act_early=bool(extra["act_early"]))
        self._actuators.append(ActuatorRecord(name, joint, kind, float(gear), float(gain), _vec(bias, 3, where, "bias"),
                                              ranges[0], ranges[1], extra))

    def add_keyframe(self, name: str, q, v) -> None:
        """Add a named state; ``q``/``v`` concatenate the joints in the order they were added."""
        self._keyframes.append((name, np.asarray(q, dtype=np.float64), np.asarray(v, dtype=np.float64)))

    # -- build -------------------------------------------------------------------
    def build(self, dtype=None, *, check_singular: bool = True) -> Model:
        """Merge fixed joints, order bodies depth-first and compile the topology.

        With ``check_singular`` (default), a model whose mass matrix ``M`` is singular at every
        configuration (a massless subtree, a zero principal moment of inertia about a joint
        axis, a duplicated dof) warns :class:`~sodyn.io.diagnostics.SingularModelWarning`
        naming the joints, as the loaders do (:func:`sodyn.io.diagnostics.warn_singular`; a
        loader that runs it itself, naming its source, passes ``check_singular=False``).
        """
        records = BuilderRecords(
            bodies=self._bodies, frames=self._frames, geoms=self._geoms, pairs=self._pairs,
            excludes=self._excludes, weld_parent=self._weld_parent, actuators=self._actuators,
            keyframes=self._keyframes, gravity=self.gravity, name=self.name, filter_parent=self.filter_parent)
        model = assemble_model(records, dtype)
        if check_singular:
            from sodyn.io.diagnostics import warn_singular  # sodyn.io imports this module

            warn_singular(model, f"model {self.name!r}", stacklevel=2)
        return model


__all__ = ["ACTUATOR_OPTIONS", "ModelBuilder", "check_inertia"]
