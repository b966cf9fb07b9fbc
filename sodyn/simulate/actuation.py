"""Actuators: controls to generalised forces.

An :class:`~sodyn.Actuators` value (loaded from MJCF ``<motor>``/``<position>``/``<velocity>``/
``<general>``, or built by :func:`motors` and :func:`position_servos`) drives one dof per
actuator in MuJoCo's affine form.  With ``u = clip(control, ctrl_range)``, length
``l = gear · q[dof]`` and velocity ``l̇ = gear · v[dof]``:

    f = clip(gain · u + bias₀ + bias₁ · l + bias₂ · l̇, force_range),      τ[dof] += gear · f

A motor has ``gain = 1``, ``bias = 0``; a position servo ``gain = k_p``,
``bias = (0, −k_p, −k_v)``.  Without actuators the control is the generalised force itself,
clipped to the model's effort limits (URDF ``effort``) where they are finite and positive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.static_index import spread_sum


class ActuatorTerms(NamedTuple):
    """Generalised force ``force (nv,)``, its stiffness ``−∂τ/∂q`` and damping ``−∂τ/∂v`` per
    dof (``(nv,)``), and each actuator's force ``actuator_force (na,)``."""

    force: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    actuator_force: jax.Array


def _one_dof_joints(model: Model, joints: Sequence[str] | None) -> list[int]:
    """Body indices of the named one-dof joints (all hinges when ``joints`` is ``None``)."""
    if joints is None:
        return [k for k, t in enumerate(model.joint_types) if KERNEL_OF.get(t) == "hinge"]
    if isinstance(joints, str):
        raise ValueError(f"joints must be a sequence of joint names, got the string {joints!r}")
    out = []
    for name in joints:
        k = model._joint_index(name)
        if KERNEL_OF.get(model.joint_types[k]) != "hinge":
            raise ValueError(f"joints: {name!r} is a {model.joint_types[k]} joint; actuators drive one-dof joints")
        out.append(k)
    return out


def _per_actuator(x, n: int, name: str, width: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    shape = (n,) if width is None else (n, width)
    try:
        return np.broadcast_to(a, shape).copy()
    except ValueError:
        raise ValueError(f"{name} must broadcast to {shape}, got shape {a.shape}") from None


def _build(model: Model, bodies: list[int], kind: str, gear, gain, bias, ctrl_range, force_range) -> Actuators:
    n = len(bodies)
    dtype = model.mass.dtype
    names = tuple(model.joint_names[k] for k in bodies)
    dofs = tuple(int(model.topology.v_start[k]) for k in bodies)
    if force_range is None:  # URDF effort limits, divided by the gear
        effort = np.asarray(model.effort_limit, dtype=np.float64)[list(dofs)] if n else np.zeros(0)
        effort = np.where(effort > 0, effort, np.inf)  # a zero effort means "not given"
        g = np.abs(_per_actuator(gear, n, "gear"))
        force_range = np.stack([-effort / g, effort / g], axis=-1)
    ranges = [_per_actuator(r, n, what, 2) for r, what in ((ctrl_range, "ctrl_range"), (force_range, "force_range"))]
    for r, what in zip(ranges, ("ctrl_range", "force_range")):
        bad = np.nonzero(r[:, 0] > r[:, 1])[0]
        if len(bad):
            raise ValueError(f"{what}: lower bound exceeds upper bound for joint {names[bad[0]]!r}")

    def arr(x):
        return jnp.asarray(x, dtype)

    return Actuators(gear=arr(_per_actuator(gear, n, "gear")), gain=arr(_per_actuator(gain, n, "gain")),
                     bias=arr(_per_actuator(bias, n, "bias", 3)), ctrl_range=arr(ranges[0]),
                     force_range=arr(ranges[1]), names=names, kind=(kind,) * n, dof=dofs)


def motors(model: Model, joints: Sequence[str] | None = None, *, gear=1.0, ctrl_range=(-np.inf, np.inf),
           force_range=None) -> Actuators:
    """Torque (force) motors on ``joints`` (default: every one-dof joint): ``τ = gear · u``.

    ``force_range`` defaults to the joints' effort limits (``±inf`` where they have none).
    """
    bodies = _one_dof_joints(model, joints)
    return _build(model, bodies, "motor", gear, 1.0, (0.0, 0.0, 0.0), ctrl_range, force_range)


def position_servos(model: Model, joints: Sequence[str] | None = None, *, kp, kv=0.0, gear=1.0,
                    ctrl_range=(-np.inf, np.inf), force_range=None) -> Actuators:
    """PD position servos: ``f = k_p (u − l) − k_v l̇`` with ``l = gear · q``, the control
    ``u`` the target position (MJCF ``<position kp kv>``)."""
    bodies = _one_dof_joints(model, joints)
    n = len(bodies)
    kp, kv = _per_actuator(kp, n, "kp"), _per_actuator(kv, n, "kv")
    bias = np.stack([np.zeros(n), -kp, -kv], axis=-1)
    return _build(model, bodies, "position", gear, kp, bias, ctrl_range, force_range)


def actuator_forces(model: Model, actuators: Actuators | None, q: jax.Array, v: jax.Array,
                    control: jax.Array) -> ActuatorTerms:
    """The generalised actuator force for ``control`` ``(na,)`` (``(nv,)`` without actuators)."""
    dtype = q.dtype
    if actuators is None:
        effort = model.effort_limit.astype(dtype)
        limit = jnp.where(effort > 0, effort, jnp.inf)  # a zero effort means "not given"
        tau = jnp.clip(control, -limit, limit)
        zero = jnp.zeros(model.nv, dtype)
        return ActuatorTerms(tau, zero, zero, tau)
    act = jax.tree_util.tree_map(lambda x: x.astype(dtype), actuators)
    dof = np.asarray(act.dof, dtype=np.int32)
    u = jnp.clip(control, act.ctrl_range[:, 0], act.ctrl_range[:, 1])
    length, rate = act.gear * q[_q_index(model, dof)], act.gear * v[dof]
    raw = act.gain * u + act.bias[:, 0] + act.bias[:, 1] * length + act.bias[:, 2] * rate
    f = jnp.clip(raw, act.force_range[:, 0], act.force_range[:, 1])
    free = (raw > act.force_range[:, 0]) & (raw < act.force_range[:, 1])  # not saturated
    g2 = act.gear * act.gear
    return ActuatorTerms(
        spread_sum(act.gear * f, dof, model.nv),
        spread_sum(jnp.where(free, jnp.maximum(-g2 * act.bias[:, 1], 0.0), 0.0), dof, model.nv),
        spread_sum(jnp.where(free, jnp.maximum(-g2 * act.bias[:, 2], 0.0), 0.0), dof, model.nv),
        f,
    )


def _q_index(model: Model, dof: np.ndarray) -> np.ndarray:
    """Static ``q`` index of each one-dof joint's ``v`` index."""
    topo = model.topology
    q_of_v = {int(topo.v_start[k]): int(topo.q_start[k]) for k in range(model.n_bodies)}
    return np.array([q_of_v[int(d)] for d in dof], dtype=np.int32)


def control_size(model: Model, actuators: Actuators | None) -> int:
    """Length of a control vector: the number of actuators, or ``nv`` without them."""
    return model.nv if actuators is None else len(actuators)


__all__ = ["ActuatorTerms", "actuator_forces", "control_size", "motors", "position_servos"]
