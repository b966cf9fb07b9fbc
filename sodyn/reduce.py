"""Reduced models: :func:`lock_joints` welds chosen joints at a configuration.

Locking joint ``k`` at ``q_k`` replaces it by a fixed joint whose placement is
``T_tree(k) ∘ T_J(q_k)``; the model is then rebuilt, so the locked body's inertia merges into
its movable ancestor (into the world when there is none) exactly as a URDF fixed joint does.
This is Pinocchio's ``buildReducedModel``: the same joints, in the same order, with the same
inertias, so ``M``, inverse and forward dynamics of the reduced model are those of the full
model with the locked joints held still.  It is also how gripper fingers or massless
subtrees (see :class:`~sodyn.io.diagnostics.SingularModelWarning`) are dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from sodyn.joints import JointSpec
from sodyn.model import WORLD, Model
from sodyn.model_builder import ModelBuilder
from sodyn.rotations import axis_angle_to_matrix, quat_to_matrix


def joint_pose(joint_type: str, q: np.ndarray, axis: np.ndarray, pitch: float) -> tuple[np.ndarray, np.ndarray]:
    """``T_J(q) = (R, p)`` of one joint in NumPy (see :func:`sodyn.joints.joint_transform`)."""
    if joint_type in ("revolute", "continuous"):
        return axis_angle_to_matrix(axis, q[0]), np.zeros(3)
    if joint_type == "prismatic":
        return np.eye(3), q[0] * axis
    if joint_type == "helical":
        return axis_angle_to_matrix(axis, q[0]), pitch * q[0] * axis
    if joint_type == "spherical":
        return quat_to_matrix(q), np.zeros(3)
    if joint_type == "free":
        return quat_to_matrix(q[3:7]), q[:3].copy()
    if joint_type == "planar":
        return axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), q[2]), np.array([q[0], q[1], 0.0])
    raise ValueError(f"unknown joint type {joint_type!r}")


def lock_joints(model: Model, joints: Sequence[str | int], q=None) -> Model:
    """The model with ``joints`` (names or body indices) welded at ``q`` (default ``model.q_neutral``).

    Everything else is kept: joint order, placements, inertias (merged), damping, armature,
    limits, springs, frames (a locked joint's name stays a frame at its child body),
    collision geoms, keyframes (without the locked coordinates) and the actuators of joints
    that stay movable (not those of tendons).

    The model's sensors, fluid, loop closures and tendons are not carried over (a warning names
    them).
    Raises ``ValueError`` for an unknown joint, for ``q`` of the wrong size, or when every
    joint would be locked.
    """
    dropped = [name for name in ("sensors", "fluid", "closures", "tendons") if getattr(model, name) is not None]
    if dropped:
        from sodyn.io.diagnostics import IgnoredElementWarning

        items = tuple(f"Model.{name}" for name in dropped)
        warnings.warn(IgnoredElementWarning(
            f"lock_joints: the reduced model has no {', '.join(items)} (they refer to the full model's bodies and "
            "joints; build them again for the reduced model)", items), stacklevel=2)
    q = np.asarray(model.q_neutral if q is None else q, dtype=np.float64)
    if q.shape != (model.nq,):
        raise ValueError(f"q must have shape ({model.nq},), got {q.shape}")
    locked = {model.joint_index(j) for j in joints}
    if len(locked) == model.n_bodies:
        raise ValueError("cannot lock every joint: the reduced model would have no movable joint")
    arrays = {k: np.asarray(getattr(model, k)) for k in (
        "mass", "com", "inertia", "tree_rotation", "tree_translation", "axis", "pitch", "damping", "armature",
        "friction", "lower_limit", "upper_limit", "velocity_limit", "effort_limit", "stiffness", "spring_reference",
        "q_neutral", "frame_rotation", "frame_translation", "gravity", "gravcomp")}
    b = ModelBuilder(gravity=arrays["gravity"], name=model.name)
    names = model.body_names
    for k, (t, jname) in enumerate(zip(model.joint_types, model.joint_names, strict=True)):
        parent = int(model.parent[k])
        qs, vs = model.joint_q_slice(k), model.joint_v_slice(k)
        rot, trans = arrays["tree_rotation"][k], arrays["tree_translation"][k]
        mass = float(arrays["mass"][k])
        # the compensated share of the body's weight (exact unless merged links had different shares)
        common = dict(mass=mass, com=arrays["com"][k], inertia=arrays["inertia"][k],
                      gravcomp=float(arrays["gravcomp"][k, 0]) / mass if mass > 0 else 0.0,
                      massless_ok=True, validate_inertia=False)
        parent_name = None if parent == WORLD else names[parent]
        if k in locked:
            r_j, p_j = joint_pose(t, q[qs], arrays["axis"][k], float(arrays["pitch"][k]))
            b.add_body(names[k], parent_name, JointSpec.fixed(), rotation=rot @ r_j, translation=trans + rot @ p_j,
                       joint_name=jname, **common)
            continue
        b.add_body(
            names[k], parent_name, JointSpec(t, tuple(arrays["axis"][k]), float(arrays["pitch"][k])),
            rotation=rot, translation=trans, joint_name=jname,
            damping=arrays["damping"][vs], armature=arrays["armature"][vs], friction=arrays["friction"][vs],
            lower=arrays["lower_limit"][qs], upper=arrays["upper_limit"][qs],
            velocity_limit=arrays["velocity_limit"][vs], effort_limit=arrays["effort_limit"][vs],
            stiffness=arrays["stiffness"][vs], spring_reference=arrays["spring_reference"][qs],
            q_neutral=arrays["q_neutral"][qs], **common,
        )
    used = set(names)
    for f, (fname, fb) in enumerate(zip(model.frame_names, model.frame_body, strict=True)):
        if fname in used:
            continue
        used.add(fname)
        b.add_frame(fname, None if fb == WORLD else names[fb], rotation=arrays["frame_rotation"][f],
                    translation=arrays["frame_translation"][f])
    for k in sorted(locked):
        if model.joint_names[k] not in used:
            used.add(model.joint_names[k])
            b.add_frame(model.joint_names[k], names[k])
    b.add_collision_from(model.geoms, names)
    a = model.actuators
    dof_joint = {int(model.topology.v_start[k]): k for k in range(model.n_bodies)}
    for i, name in enumerate(a.names):
        k = dof_joint[a.dof[i]]
        if k in locked or a.tendon[i] >= 0:  # a tendon's actuators go with the tendons (warned above)
            continue
        b.add_actuator(name, model.joint_names[k], kind=a.kind[i], gear=float(a.gear[i]), gain=float(a.gain[i]),
                       bias=np.asarray(a.bias[i]), ctrl_range=np.asarray(a.ctrl_range[i]),
                       force_range=np.asarray(a.force_range[i]), gain_slope=np.asarray(a.gain_slope[i]),
                       time_constant=float(a.time_constant[i]), act_range=np.asarray(a.act_range[i]),
                       stall_force=float(a.stall_force[i]), back_emf=float(a.back_emf[i]),
                       power_limit=float(a.power_limit[i]), dynamics=a.dynamics[i], act_early=a.act_early[i])
    keep_q = np.concatenate([np.arange(model.nq)[model.joint_q_slice(k)] for k in range(model.n_bodies)
                             if k not in locked])
    keep_v = np.concatenate([np.arange(model.nv)[model.joint_v_slice(k)] for k in range(model.n_bodies)
                             if k not in locked])
    kf = model.keyframes
    for i, name in enumerate(kf.names):
        b.add_keyframe(name, np.asarray(kf.q[i])[keep_q], np.asarray(kf.v[i])[keep_v])
    return b.build(dtype=model.mass.dtype, check_singular=False)


__all__ = ["joint_pose", "lock_joints"]
