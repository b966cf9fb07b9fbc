"""The :class:`Model` (static topology + array parameters) and the :class:`ModelBuilder`.

A model has two kinds of field (DESIGN.md §2):

* static: the :class:`~sodyn.topology.Topology` (parents, joint types, q/v slices, level
  schedule) and the names of bodies, joints and frames; changing them recompiles;
* parameters: JAX arrays (masses, centres of mass, inertias, joint placements, axes,
  gravity, damping, armature, limits) that ``vmap`` and ``grad`` see as ordinary leaves.

Body ``k``'s frame is its joint's child frame.  Its pose in the parent body's frame is
``T_tree(k) ∘ T_J(q_k)``, with ``T_tree = (tree_rotation, tree_translation)`` the fixed
placement of the joint in the parent.  Fixed joints are merged into their movable ancestor
when the model is built: the inertia is added to the ancestor and the merged link stays
addressable as a frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import JOINT_TYPES, KERNEL_OF, JointSpec, nq_of, nv_of
from sodyn.joints import neutral as joint_neutral
from sodyn.model_data import (
    DYNAMICS,
    GEOM_TYPES,
    Actuators,
    ContactPairs,
    Geoms,
    HeightFields,
    Keyframes,
    check_geom,
    check_height_field,
)
from sodyn.rotations import quat_to_matrix

if TYPE_CHECKING:  # the modules of these import this one
    from sodyn.constraints import LoopClosures
    from sodyn.sensors import Sensors
    from sodyn.simulate.fluid import Fluid
    from sodyn.simulate.tendons import Tendons
from sodyn.topology import Topology, compile_topology

WORLD = -1

class Model(eqx.Module):
    """A rigid multibody tree.  Build one with :class:`ModelBuilder` or a loader.

    Parameter arrays are in body order (``n = n_bodies``) or dof order:

    - ``mass (n,)``, ``com (n, 3)`` (in the body frame), ``inertia (n, 3, 3)`` (rotational
      inertia about the centre of mass, body axes);
    - ``tree_rotation (n, 3, 3)``, ``tree_translation (n, 3)``: joint placement in the parent;
    - ``axis (n, 3)`` (unit; used by hinges), ``pitch (n,)`` (helical lead, m/rad);
    - ``frame_rotation (nf, 3, 3)``, ``frame_translation (nf, 3)``: frame placements in
      their body (``frame_body``, ``-1`` = world);
    - ``gravity (3,)``; ``damping``, ``armature``, ``friction``, ``velocity_limit``,
      ``effort_limit``, ``stiffness`` ``(nv,)``; ``lower_limit``, ``upper_limit``,
      ``spring_reference``, ``q_neutral`` ``(nq,)``; ``gravcomp (n, 4)``: the mass ``m̃`` that
      gravity compensation carries on each body and its first moment ``m̃ c̃`` (body frame),
      zero without it (MuJoCo's body ``gravcomp``, :func:`sodyn.simulate.gravity_compensation`);
    - ``actuators`` (:class:`Actuators`), ``geoms`` (:class:`Geoms`) and ``keyframes``
      (:class:`Keyframes`): data the loaders keep for the actuator, contact and simulation
      code (empty when the source has none);
    - ``sensors`` (:class:`sodyn.sensors.Sensors`), ``fluid``
      (:class:`sodyn.simulate.fluid.Fluid`) and ``closures`` (:class:`sodyn.LoopClosures`: an
      MJCF file's active ``<equality>`` constraints): what :func:`~sodyn.simulate.step` and
      :func:`~sodyn.simulate.rollout` use by default (``None`` when the model has none; set
      them with ``dataclasses.replace(model, fluid=…)``);
    - ``tendons`` (:class:`sodyn.simulate.tendons.Tendons`, an MJCF file's fixed tendons: their
      springs, dampers, limits and friction act in every step, and tendon actuators and sensors
      read them; ``None`` when the model has none).

    A joint spring pulls with ``τ = −stiffness · (q ⊖ spring_reference)``; ``friction`` is
    the dry-friction (MuJoCo ``frictionloss``) force bound; ``q_neutral`` is what
    :func:`sodyn.neutral_configuration` returns (MuJoCo's ``qpos0`` for MJCF models).
    """

    mass: jax.Array
    com: jax.Array
    inertia: jax.Array
    tree_rotation: jax.Array
    tree_translation: jax.Array
    axis: jax.Array
    pitch: jax.Array
    frame_rotation: jax.Array
    frame_translation: jax.Array
    gravity: jax.Array
    damping: jax.Array
    armature: jax.Array
    friction: jax.Array
    lower_limit: jax.Array
    upper_limit: jax.Array
    velocity_limit: jax.Array
    effort_limit: jax.Array
    stiffness: jax.Array
    spring_reference: jax.Array
    q_neutral: jax.Array
    gravcomp: jax.Array
    actuators: "Actuators"
    geoms: "Geoms"
    keyframes: "Keyframes"
    topology: Topology = eqx.field(static=True)
    body_names: tuple[str, ...] = eqx.field(static=True)
    joint_names: tuple[str, ...] = eqx.field(static=True)
    frame_names: tuple[str, ...] = eqx.field(static=True)
    frame_body: tuple[int, ...] = eqx.field(static=True)
    name: str = eqx.field(static=True, default="model")
    sensors: Sensors | None = None
    fluid: Fluid | None = None
    closures: LoopClosures | None = None
    tendons: Tendons | None = None

    # -- sizes and names ----------------------------------------------------------
    @property
    def nq(self) -> int:
        return self.topology.nq

    @property
    def nv(self) -> int:
        return self.topology.nv

    @property
    def n_bodies(self) -> int:
        return self.topology.n_bodies

    @property
    def n_frames(self) -> int:
        return len(self.frame_names)

    @property
    def parent(self) -> np.ndarray:
        return self.topology.parent

    @property
    def joint_types(self) -> tuple[str, ...]:
        return self.topology.joint_type

    def joint_q_slice(self, joint: str | int) -> slice:
        """Slice of ``q`` that belongs to a joint (by name or body index)."""
        k = self._joint_index(joint)
        s = int(self.topology.q_start[k])
        return slice(s, s + nq_of(self.topology.joint_type[k]))

    def joint_v_slice(self, joint: str | int) -> slice:
        """Slice of ``v`` that belongs to a joint (by name or body index)."""
        k = self._joint_index(joint)
        s = int(self.topology.v_start[k])
        return slice(s, s + nv_of(self.topology.joint_type[k]))

    def _joint_index(self, joint: str | int) -> int:
        if isinstance(joint, (int, np.integer)):
            if not 0 <= joint < self.n_bodies:
                raise ValueError(f"joint index {joint} out of range [0, {self.n_bodies})")
            return int(joint)
        if joint in self.joint_names:
            return self.joint_names.index(joint)
        raise ValueError(f"unknown joint {joint!r}; joints are {list(self.joint_names)}")

    def body_id(self, body: str | int) -> int:
        """Index of a body given its name (or index)."""
        if isinstance(body, (int, np.integer)):
            if not 0 <= body < self.n_bodies:
                raise ValueError(f"body index {body} out of range [0, {self.n_bodies})")
            return int(body)
        if body in self.body_names:
            return self.body_names.index(body)
        raise ValueError(f"unknown body {body!r}; bodies are {list(self.body_names)}")

    def frame_id(self, frame: str | int) -> int:
        """Index of a frame given its name, a body name or a joint name (or an index)."""
        if isinstance(frame, (int, np.integer)):
            if not 0 <= frame < self.n_frames:
                raise ValueError(f"frame index {frame} out of range [0, {self.n_frames})")
            return int(frame)
        if not isinstance(frame, str):
            raise TypeError(f"frame must be a name or an index, got {type(frame).__name__}")
        if frame in self.frame_names:
            return self.frame_names.index(frame)
        if frame in self.joint_names:
            return self.frame_names.index(self.body_names[self.joint_names.index(frame)])
        raise ValueError(f"unknown frame {frame!r}; frames are {list(self.frame_names)}")

    def astype(self, dtype) -> "Model":
        """The same model with every floating-point parameter cast to ``dtype`` (float32 or float64).

        The model's dtype is the one every simulation runs in (:meth:`sodyn.simulate.State.initial`
        casts states to it).  A finite parameter that overflows ``dtype`` (a mass of 1e39 is
        ``inf`` in float32) raises a ``ValueError`` naming the field, rather than simulating
        with ``inf``; so do float16/bfloat16 (too coarse for dynamics), complex and integer
        dtypes.  Under ``jit`` (traced parameters) the overflow check is skipped.
        """
        target = check_model_dtype(dtype)

        def cast(path, x):
            if not jnp.issubdtype(x.dtype, jnp.floating):
                return x
            y = x.astype(target)
            if not isinstance(x, jax.core.Tracer) and not isinstance(y, jax.core.Tracer) and target != x.dtype:
                _check_no_overflow(jax.tree_util.keystr(path), np.asarray(x), np.asarray(y), target)
            return y

        return jax.tree_util.tree_map_with_path(cast, self)

    def __repr__(self) -> str:
        return (
            f"Model({self.name!r}, bodies={self.n_bodies}, nq={self.nq}, nv={self.nv}, "
            f"levels={self.topology.n_levels}, slots={self.topology.width})"
        )


def check_model_dtype(dtype) -> np.dtype:
    """``dtype`` as a NumPy dtype if a model may take it (float32 or float64), else a ``ValueError``."""
    try:
        target = np.dtype(dtype)
    except TypeError as err:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from err
    if target not in (np.dtype(np.float32), np.dtype(np.float64)):
        hint = " (too coarse for dynamics)" if target.kind == "f" or "bfloat16" in target.name else ""
        raise ValueError(f"dtype must be float32 or float64, got {target.name}{hint}")
    return target


def _check_no_overflow(name: str, before: np.ndarray, after: np.ndarray, dtype) -> None:
    """Raise if a finite entry of ``before`` became non-finite in ``after`` (cast to ``dtype``)."""
    lost = np.isfinite(before) & ~np.isfinite(after)
    if np.any(lost):
        value = before[lost].reshape(-1)[0]
        raise ValueError(f"model parameter {name.lstrip('.')} = {value:g} overflows {np.dtype(dtype).name} "
                         f"(largest {float(np.finfo(dtype).max):.3g}); rescale it or use float64")


# parameters that must be finite (the limits may be ±inf: unlimited)
_FINITE_FIELDS = ("mass", "com", "inertia", "tree_rotation", "tree_translation", "axis", "pitch", "frame_rotation",
                  "frame_translation", "gravity", "damping", "armature", "friction", "stiffness",
                  "spring_reference", "q_neutral", "gravcomp")


def _check_built_values(model: Model) -> None:
    """A parameter the builder accepted (finite in float64) that is not finite in the model's dtype
    overflowed it: raise naming the field (and the body for per-body fields)."""
    for name in _FINITE_FIELDS:
        x = np.asarray(getattr(model, name))
        if not np.all(np.isfinite(x)):
            at = np.argwhere(~np.isfinite(x))[0]
            where = f" of body {model.body_names[at[0]]!r}" if x.shape[:1] == (model.n_bodies,) else ""
            raise ValueError(f"model parameter {name}{where} overflows {x.dtype.name} (largest "
                             f"{float(np.finfo(x.dtype).max):.3g}); rescale it or build with dtype=float64")


# ---------------------------------------------------------------------------
# builder
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class _Body:
    name: str
    parent: int
    joint: JointSpec
    joint_name: str
    rotation: np.ndarray
    translation: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    damping: np.ndarray
    armature: np.ndarray
    friction: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    stiffness: np.ndarray
    spring_reference: np.ndarray
    q_neutral: np.ndarray
    gravcomp: float = 0.0


@dataclasses.dataclass
class _Geom:
    name: str
    type: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray
    size: np.ndarray
    friction: np.ndarray
    static: dict  # contype, conaffinity, condim, priority, margin, gap (check_geom)
    hull: object = None  # sodyn.io.meshes.Hull of a mesh geom
    hfield: tuple | None = None  # (elevation (nrow, ncol), (x, y, z_top, z_base)) of a height field geom


@dataclasses.dataclass
class _Actuator:
    name: str
    joint: str
    kind: str
    gear: float
    gain: float
    bias: np.ndarray
    ctrl_range: np.ndarray
    force_range: np.ndarray
    extra: dict


#: The optional actuator parameters of :meth:`ModelBuilder.add_actuator` and their defaults
#: (:class:`Actuators`).
ACTUATOR_OPTIONS: dict[str, object] = {"gain_slope": (0.0, 0.0), "time_constant": 1.0,
                                       "act_range": (-np.inf, np.inf), "stall_force": np.inf, "back_emf": 0.0,
                                       "power_limit": np.inf, "dynamics": "none", "act_early": False}


def as_rotation(rotation, where: str) -> np.ndarray:
    r = np.asarray(rotation if rotation is not None else np.eye(3), dtype=np.float64)
    if r.shape == (4,):  # quaternion wxyz
        r = quat_to_matrix(r)
    if r.shape != (3, 3) or not np.all(np.isfinite(r)):
        raise ValueError(f"{where}: rotation must be a finite 3x3 matrix or a wxyz quaternion, got {rotation!r}")
    if np.max(np.abs(r @ r.T - np.eye(3))) > 1e-6 or np.linalg.det(r) < 0:
        raise ValueError(f"{where}: rotation is not a proper orthonormal matrix")
    return r


def _vec(x, n: int, where: str, what: str) -> np.ndarray:
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
        self._bodies: list[_Body] = []
        self._frames: list[tuple[str, int, np.ndarray, np.ndarray]] = []
        self._names: dict[str, int] = {}
        self._geoms: list[_Geom] = []
        self._geom_index: dict[str, int] = {}
        self._pairs: list[tuple[str, int, int, int, np.ndarray, float, float]] = []
        self._excludes: list[tuple[int, int]] = []
        self._weld_parent: dict[int, int] = {}
        self._actuators: list[_Actuator] = []
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
        body = _Body(
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
        self._geoms.append(_Geom(name, type, b, *pose, size, friction, static, hull, hfield))
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
        self._actuators.append(_Actuator(name, joint, kind, float(gear), float(gain), _vec(bias, 3, where, "bias"),
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
        if not self._bodies:
            raise ValueError("cannot build a model without bodies")
        bodies = self._bodies
        n_all = len(bodies)
        children: list[list[int]] = [[] for _ in range(n_all)]
        roots = []
        for i, b in enumerate(bodies):
            (roots if b.parent == WORLD else children[b.parent]).append(i)

        # Depth-first order of all links (the order of q/v in Pinocchio and MuJoCo).
        order: list[int] = []
        stack = list(reversed(roots))
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(children[i]))

        # Merge fixed joints: each link maps to (movable body it belongs to, pose in it).
        owner: dict[int, int] = {}
        pose: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        new_index: dict[int, int] = {}
        kept: list[int] = []
        for i in order:
            b = bodies[i]
            if b.parent == WORLD:
                par_owner, pr, pp = WORLD, np.eye(3), np.zeros(3)
            else:
                par_owner = owner[b.parent]
                pr, pp = pose[b.parent]
            r = pr @ b.rotation
            p = pp + pr @ b.translation
            if b.joint.type == "fixed":
                owner[i], pose[i] = par_owner, (r, p)
            else:
                new_index[i] = len(kept)
                kept.append(i)
                owner[i], pose[i] = new_index[i], (np.eye(3), np.zeros(3))
        if not kept:
            raise ValueError("the model has no movable joint (every joint is fixed)")

        n = len(kept)
        parent = np.zeros(n, dtype=np.int64)
        tree_r = np.zeros((n, 3, 3))
        tree_p = np.zeros((n, 3))
        for i in kept:
            b = bodies[i]
            k = new_index[i]
            if b.parent == WORLD:
                parent[k], pr, pp = WORLD, np.eye(3), np.zeros(3)
            else:
                parent[k] = owner[b.parent]
                pr, pp = pose[b.parent]
            tree_r[k] = pr @ b.rotation
            tree_p[k] = pp + pr @ b.translation

        # Composite inertia of each movable body and the fixed links merged into it.
        mass = np.zeros(n)
        first_moment = np.zeros((n, 3))
        second = np.zeros((n, 3, 3))  # inertia about the body origin
        compensated = np.zeros((n, 4))  # gravity compensation's mass and first moment
        for i in order:
            k = owner[i]
            if k == WORLD:
                continue
            b = bodies[i]
            r, p = pose[i]
            c = r @ b.com + p
            mass[k] += b.mass
            first_moment[k] += b.mass * c
            compensated[k] += b.gravcomp * b.mass * np.concatenate([[1.0], c])
            second[k] += r @ b.inertia @ r.T + b.mass * (c @ c * np.eye(3) - np.outer(c, c))
        com = np.zeros((n, 3))
        inertia = np.zeros((n, 3, 3))
        for k in range(n):
            if mass[k] > 0:
                com[k] = first_moment[k] / mass[k]
                c = com[k]
                inertia[k] = second[k] - mass[k] * (c @ c * np.eye(3) - np.outer(c, c))
            else:  # massless: a rotational inertia is the same about every point
                inertia[k] = second[k]
            inertia[k] = 0.5 * (inertia[k] + inertia[k].T)

        joint_types = tuple(bodies[i].joint.type for i in kept)
        topo = compile_topology(parent, joint_types)
        cat = lambda attr: np.concatenate([getattr(bodies[i], attr) for i in kept])  # noqa: E731

        # Frames: one per movable body, one per merged fixed link, then user frames.
        f_names, f_body, f_r, f_p = [], [], [], []
        for i in order:
            f_names.append(bodies[i].name)
            f_body.append(owner[i])
            f_r.append(pose[i][0])
            f_p.append(pose[i][1])
        for name, b, r, p in self._frames:
            if b == WORLD:
                ob, pr, pp = WORLD, np.eye(3), np.zeros(3)
            else:
                ob = owner[b]
                pr, pp = pose[b]
            f_names.append(name)
            f_body.append(ob)
            f_r.append(pr @ r)
            f_p.append(pp + pr @ p)

        dtype = check_model_dtype(dtype or jnp.zeros(()).dtype)

        def arr(x):  # an overflow of the dtype is reported by _check_built_values, naming the field
            with np.errstate(over="ignore"):
                return jnp.asarray(np.asarray(x, dtype=np.float64), dtype=dtype)

        def placed(b, r, p):  # a placement in builder body b -> (movable body, R, p) in it
            if b == WORLD:
                return WORLD, r, p
            pr, pp = pose[b]
            return owner[b], pr @ r, pp + pr @ p

        geoms = self._build_geoms(placed, owner, new_index, parent, arr)
        actuators = self._build_actuators(kept, new_index, topo, arr)
        keyframes = self._build_keyframes(kept, arr)
        model = Model(
            mass=arr(mass), com=arr(com), inertia=arr(inertia),
            tree_rotation=arr(tree_r), tree_translation=arr(tree_p),
            axis=arr([bodies[i].joint.axis for i in kept]),
            pitch=arr([bodies[i].joint.pitch for i in kept]),
            frame_rotation=arr(np.array(f_r).reshape(-1, 3, 3)),
            frame_translation=arr(np.array(f_p).reshape(-1, 3)),
            gravity=arr(self.gravity),
            damping=arr(cat("damping")), armature=arr(cat("armature")), friction=arr(cat("friction")),
            lower_limit=arr(cat("lower")), upper_limit=arr(cat("upper")),
            velocity_limit=arr(cat("velocity_limit")), effort_limit=arr(cat("effort_limit")),
            stiffness=arr(cat("stiffness")), spring_reference=arr(cat("spring_reference")),
            q_neutral=arr(cat("q_neutral")), gravcomp=arr(compensated), actuators=actuators, geoms=geoms,
            keyframes=keyframes,
            topology=topo,
            body_names=tuple(bodies[i].name for i in kept),
            joint_names=tuple(bodies[i].joint_name for i in kept),
            frame_names=tuple(f_names), frame_body=tuple(int(x) for x in f_body),
            name=self.name,
        )
        _check_built_values(model)
        if check_singular:
            from sodyn.io.diagnostics import warn_singular  # sodyn.io imports this module

            warn_singular(model, f"model {self.name!r}", stacklevel=2)
        return model


    def _build_geoms(self, placed, owner, new_index, parent, arr) -> Geoms:
        g = [(x, *placed(x.body, x.rotation, x.translation)) for x in self._geoms]
        col = lambda key: tuple(x[0].static[key] for x in g)  # noqa: E731
        weld = lambda b: WORLD if b == WORLD else owner[b]  # noqa: E731
        exclude = sorted({(min(a, b), max(a, b)) for a, b in ((weld(a), weld(b)) for a, b in self._excludes) if a != b})
        weld_parent = [int(p) for p in parent]
        for b, p in self._weld_parent.items():
            if b in new_index:
                weld_parent[new_index[b]] = weld(p)
        pairs = self._pairs
        vertices, faces = _mesh_arrays([x[0].hull for x in g])
        hfield, hfield_id = _height_fields([x[0] for x in g], arr)
        return Geoms(
            rotation=arr(np.array([x[2] for x in g]).reshape(-1, 3, 3)),
            translation=arr(np.array([x[3] for x in g]).reshape(-1, 3)),
            size=arr(np.array([x[0].size for x in g]).reshape(-1, 3)),
            friction=arr(np.array([x[0].friction for x in g]).reshape(-1, 3)),
            margin=arr(np.array(col("margin"), dtype=np.float64)), gap=arr(np.array(col("gap"), dtype=np.float64)),
            vertices=arr(vertices), faces=arr(faces),
            pairs=ContactPairs(
                friction=arr(np.array([p[4] for p in pairs]).reshape(-1, 3)),
                margin=arr([p[5] for p in pairs]), gap=arr([p[6] for p in pairs]),
                geom1=tuple(p[1] for p in pairs), geom2=tuple(p[2] for p in pairs),
                condim=tuple(p[3] for p in pairs), names=tuple(p[0] for p in pairs)),
            names=tuple(x[0].name for x in g), type=tuple(x[0].type for x in g), body=tuple(int(x[1]) for x in g),
            contype=col("contype"), conaffinity=col("conaffinity"), condim=col("condim"), priority=col("priority"),
            exclude=tuple(exclude), filter_parent=self.filter_parent, weld_parent=tuple(weld_parent),
            hfield=hfield, hfield_id=hfield_id,
        )

    def _build_actuators(self, kept, new_index, topo, arr) -> Actuators:
        by_joint = {self._bodies[i].joint_name: new_index[i] for i in kept}
        dofs = []
        for a in self._actuators:
            if a.joint not in by_joint:
                raise ValueError(f"actuator {a.name!r}: joint {a.joint!r} does not exist or is fixed")
            k = by_joint[a.joint]
            if nv_of(topo.joint_type[k]) != 1:
                raise ValueError(f"actuator {a.name!r}: joint {a.joint!r} is not a one-dof joint")
            dofs.append(int(topo.v_start[k]))
        acts = self._actuators

        def col(key, width=None):
            a = np.array([x.extra[key] for x in acts], dtype=np.float64)
            return arr(a if width is None else a.reshape(-1, width))

        return Actuators(
            gear=arr([a.gear for a in acts]), gain=arr([a.gain for a in acts]),
            bias=arr(np.array([a.bias for a in acts]).reshape(-1, 3)),
            ctrl_range=arr(np.array([a.ctrl_range for a in acts]).reshape(-1, 2)),
            force_range=arr(np.array([a.force_range for a in acts]).reshape(-1, 2)),
            names=tuple(a.name for a in acts), kind=tuple(a.kind for a in acts), dof=tuple(dofs),
            gain_slope=col("gain_slope", 2), time_constant=col("time_constant"), act_range=col("act_range", 2),
            stall_force=col("stall_force"), back_emf=col("back_emf"), power_limit=col("power_limit"),
            dynamics=tuple(a.extra["dynamics"] for a in acts), act_early=tuple(a.extra["act_early"] for a in acts),
        )

    def _build_keyframes(self, kept, arr) -> Keyframes:
        # q/v of the keyframes are given in insertion order; the model orders bodies as `kept`.
        movable = [i for i, b in enumerate(self._bodies) if b.joint.type != "fixed"]
        q_at, v_at, nq, nv = {}, {}, 0, 0
        for i in movable:
            t = self._bodies[i].joint.type
            q_at[i], v_at[i] = slice(nq, nq + nq_of(t)), slice(nv, nv + nv_of(t))
            nq, nv = nq + nq_of(t), nv + nv_of(t)
        qs, vs = [], []
        for name, q, v in self._keyframes:
            if q.shape != (nq,) or v.shape != (nv,):
                raise ValueError(f"keyframe {name!r}: q and v must have shapes ({nq},) and ({nv},), "
                                 f"got {q.shape} and {v.shape}")
            qs.append(np.concatenate([q[q_at[i]] for i in kept]))
            vs.append(np.concatenate([v[v_at[i]] for i in kept]))
        return Keyframes(q=arr(np.array(qs).reshape(-1, nq)), v=arr(np.array(vs).reshape(-1, nv)),
                         names=tuple(k[0] for k in self._keyframes))


def _height_fields(geoms, arr) -> tuple[HeightFields, tuple[int, ...]]:
    """The :class:`HeightFields` of the height field geoms (one per geom, geoms given the same
    elevation array object sharing it) and each geom's ``hfield_id``."""
    fields, ids, seen = [], [], {}
    for x in geoms:
        if x.hfield is None:
            ids.append(-1)
            continue
        key = (id(x.hfield[0]), x.hfield[1])
        if key not in seen:
            seen[key] = len(fields)
            fields.append((x.name, *x.hfield))
        ids.append(seen[key])
    if not fields:
        return HeightFields(arr(np.zeros((0, 2, 2)))), tuple(ids)
    rows, cols = max(f[1].shape[0] for f in fields), max(f[1].shape[1] for f in fields)
    elevation = np.zeros((len(fields), rows, cols))
    for k, (_, e, _) in enumerate(fields):
        elevation[k, : e.shape[0], : e.shape[1]] = e
    return HeightFields(arr(elevation), names=tuple(f[0] for f in fields), nrow=tuple(f[1].shape[0] for f in fields),
                        ncol=tuple(f[1].shape[1] for f in fields), size=tuple(f[2] for f in fields)), tuple(ids)


def _mesh_arrays(hulls) -> tuple[np.ndarray, np.ndarray]:
    """``vertices (ng, V, 3)`` and ``faces (ng, F, 4)`` of :class:`Geoms` from each geom's hull
    (``None`` for a primitive): padded by repeating a hull's first row, zeros for primitives."""
    def pad(rows, width):
        n = max([1] + [len(r) for r in rows if r is not None])
        out = np.zeros((len(rows), n, width))
        for i, r in enumerate(rows):
            if r is not None:
                out[i] = np.concatenate([r, np.repeat(r[:1], n - len(r), axis=0)])
        return out

    return (pad([None if h is None else h.vertices for h in hulls], 3),
            pad([None if h is None else h.faces for h in hulls], 4))


def hinge_coefficients(model: Model, dtype) -> tuple[jax.Array, jax.Array]:
    """Per-body ``(ρ, τ)`` of :mod:`sodyn.joints` (zero for non-hinge bodies)."""
    jt = model.topology.joint_type
    rot = np.array([t in ("revolute", "continuous", "helical") for t in jt], dtype=np.float64)
    prism = np.array([t == "prismatic" for t in jt], dtype=np.float64)
    helical = np.array([t == "helical" for t in jt], dtype=np.float64)
    trans = jnp.asarray(prism, dtype) + jnp.asarray(helical, dtype) * model.pitch.astype(dtype)
    return jnp.asarray(rot, dtype), trans


__all__ = [
    "GEOM_TYPES", "KERNEL_OF", "WORLD", "Actuators", "ContactPairs", "Geoms", "JointSpec", "Keyframes", "Model",
    "ModelBuilder", "check_inertia",
]
