"""The :class:`Model`: static topology + array parameters, and the queries on it.

A model has two kinds of field (DESIGN.md §2):

* static: the :class:`~sodyn.topology.Topology` (parents, joint types, q/v slices, level
  schedule) and the names of bodies, joints and frames; changing them recompiles;
* parameters: JAX arrays (masses, centres of mass, inertias, joint placements, axes,
  gravity, damping, armature, limits) that ``vmap`` and ``grad`` see as ordinary leaves.

Body ``k``'s frame is its joint's child frame.  Its pose in the parent body's frame is
``T_tree(k) ∘ T_J(q_k)``, with ``T_tree = (tree_rotation, tree_translation)`` the fixed
placement of the joint in the parent.  Fixed joints are merged into their movable ancestor
when the model is built (:mod:`sodyn.model_assembly`): the inertia is added to the ancestor
and the merged link stays addressable as a frame.  Build a model with
:class:`sodyn.model_builder.ModelBuilder` or a loader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import nq_of, nv_of
from sodyn.model_data import Actuators, Geoms, Keyframes

if TYPE_CHECKING:  # the modules of these import this one
    from sodyn.constraints import LoopClosures
    from sodyn.sensors import Sensors
    from sodyn.simulate.fluid import Fluid
    from sodyn.simulate.tendons import Tendons
from sodyn.topology import Topology

#: The parent index of a root body (and the body of a frame or geom fixed in the world).
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
        k = self.joint_index(joint)
        s = int(self.topology.q_start[k])
        return slice(s, s + nq_of(self.topology.joint_type[k]))

    def joint_v_slice(self, joint: str | int) -> slice:
        """Slice of ``v`` that belongs to a joint (by name or body index)."""
        k = self.joint_index(joint)
        s = int(self.topology.v_start[k])
        return slice(s, s + nv_of(self.topology.joint_type[k]))

    def joint_index(self, joint: str | int) -> int:
        """Body index of a joint given its name (or index); a ``ValueError`` for an unknown one."""
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


def hinge_coefficients(model: Model, dtype) -> tuple[jax.Array, jax.Array]:
    """Per-body ``(ρ, τ)`` of :mod:`sodyn.joints` (zero for non-hinge bodies)."""
    jt = model.topology.joint_type
    rot = np.array([t in ("revolute", "continuous", "helical") for t in jt], dtype=np.float64)
    prism = np.array([t == "prismatic" for t in jt], dtype=np.float64)
    helical = np.array([t == "helical" for t in jt], dtype=np.float64)
    trans = jnp.asarray(prism, dtype) + jnp.asarray(helical, dtype) * model.pitch.astype(dtype)
    return jnp.asarray(rot, dtype), trans


__all__ = ["WORLD", "Model", "check_model_dtype", "hinge_coefficients"]
