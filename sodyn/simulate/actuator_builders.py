"""Actuator sets for a model's joints (:class:`~sodyn.Actuators`, the law of
:mod:`sodyn.simulate.actuation`).

- :func:`motors`: torque motors ``f = u``, optionally with the torque–speed envelope of the
  joints' velocity limits;
- :func:`position_servos`, :func:`velocity_servos`: MuJoCo's ``<position>`` and ``<velocity>``;
- :func:`pd_servos`: per joint a position servo, a velocity servo and a feed-forward motor on
  one dof, ``τ = k_p (q* − q) + k_v (v* − v) + τ_ff``, commanded by :func:`servo_control`
  (their gains are stepped implicitly, so stiff servos stay stable at a controller's rate);
- :func:`dc_motors`: a geared DC motor driven by voltage or current.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.simulate.actuation import q_index


def one_dof_joints(model: Model, joints: Sequence[str] | None) -> list[int]:
    """Body indices of the named one-dof joints (all hinges when ``joints`` is ``None``)."""
    if joints is None:
        return [k for k, t in enumerate(model.joint_types) if KERNEL_OF.get(t) == "hinge"]
    if isinstance(joints, str):
        raise ValueError(f"joints must be a sequence of joint names, got the string {joints!r}")
    out = []
    for name in joints:
        k = model.joint_index(name)
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


def _effort_range(model: Model, dofs: Sequence[int], gear: np.ndarray) -> np.ndarray:
    """The joints' effort limits as actuator force ranges (``±inf`` where none is given)."""
    effort = np.asarray(model.effort_limit, dtype=np.float64)[list(dofs)] if len(dofs) else np.zeros(0)
    effort = np.where(effort > 0, effort, np.inf)  # a zero effort means "not given"
    return np.stack([-effort / np.abs(gear), effort / np.abs(gear)], axis=-1)


def _build(model: Model, bodies: list[int], kind, gear, gain, bias, ctrl_range, force_range, *,
           names=None, **fields) -> Actuators:
    n = len(bodies)
    dtype = model.mass.dtype
    joint_names = tuple(model.joint_names[k] for k in bodies)
    names = joint_names if names is None else tuple(names)
    dofs = tuple(int(model.topology.v_start[k]) for k in bodies)
    gear = _per_actuator(gear, n, "gear")
    if force_range is None:  # URDF effort limits, divided by the gear
        force_range = _effort_range(model, dofs, gear)
    ranges = [_per_actuator(r, n, what, 2) for r, what in ((ctrl_range, "ctrl_range"), (force_range, "force_range"))]
    for r, what in zip(ranges, ("ctrl_range", "force_range")):
        bad = np.nonzero(r[:, 0] > r[:, 1])[0]
        if len(bad):
            raise ValueError(f"{what}: lower bound exceeds upper bound for joint {joint_names[bad[0]]!r}")
    leaves = {key: jnp.asarray(_per_actuator(value, n, key), dtype) for key, value in fields.items()}
    return Actuators(gear=jnp.asarray(gear, dtype), gain=jnp.asarray(_per_actuator(gain, n, "gain"), dtype),
                     bias=jnp.asarray(_per_actuator(bias, n, "bias", 3), dtype),
                     ctrl_range=jnp.asarray(ranges[0], dtype), force_range=jnp.asarray(ranges[1], dtype),
                     names=names, kind=(kind,) * n if isinstance(kind, str) else tuple(kind), dof=dofs, **leaves)


def _velocity_limits(model: Model, bodies: list[int], velocity_limit) -> np.ndarray:
    """Per-actuator joint velocity limits: ``"model"`` reads the model's (URDF ``velocity``)."""
    if isinstance(velocity_limit, str):
        if velocity_limit != "model":
            raise ValueError(f"velocity_limit must be 'model', a number, an array or None, got {velocity_limit!r}")
        dofs = [int(model.topology.v_start[k]) for k in bodies]
        w = np.asarray(model.velocity_limit, dtype=np.float64)[dofs] if dofs else np.zeros(0)
        return np.where(w > 0, w, np.inf)   # a zero velocity limit means "not given"
    w = _per_actuator(velocity_limit, len(bodies), "velocity_limit")
    if np.any(~(w > 0)):
        raise ValueError(f"velocity_limit must be positive, got {velocity_limit!r}")
    return w


def motors(model: Model, joints: Sequence[str] | None = None, *, gear=1.0, ctrl_range=(-np.inf, np.inf),
           force_range=None, velocity_limit=None, stall_force=None, power_limit=np.inf) -> Actuators:
    """Torque (force) motors on ``joints`` (default: every one-dof joint): ``τ = gear · u``.

    ``force_range`` defaults to the joints' effort limits (``±inf`` where they have none).
    ``velocity_limit`` (joint speed: ``"model"`` for the model's, URDF ``velocity``) adds the
    linear torque–speed envelope of :class:`~sodyn.Actuators` that reaches zero at that speed,
    from ``stall_force`` (default: the upper force bound) at rest: at full control a joint
    approaches its limit and never passes it, and beyond it the motor brakes.  A
    ``stall_force`` above the force bound gives a flat torque up to the speed where the envelope
    meets it, as a current-limited motor has.  ``power_limit`` bounds ``|f l̇|`` where the motor
    does work.
    """
    bodies = one_dof_joints(model, joints)
    n = len(bodies)
    g = _per_actuator(gear, n, "gear")
    fields = {"power_limit": power_limit}
    if velocity_limit is not None:
        speed = _velocity_limits(model, bodies, velocity_limit) * np.abs(g)    # actuator speed l̇
        upper = (_effort_range(model, [int(model.topology.v_start[k]) for k in bodies], g)[:, 1]
                 if force_range is None else _per_actuator(force_range, n, "force_range", 2)[:, 1])
        stall = upper if stall_force is None else _per_actuator(stall_force, n, "stall_force")
        if np.any(~np.isfinite(stall[np.isfinite(speed)])):
            raise ValueError("velocity_limit needs a finite stall_force (or a finite force_range / effort limit)")
        fields.update(stall_force=np.where(np.isfinite(speed), stall, np.inf),
                      back_emf=np.where(np.isfinite(speed), stall / speed, 0.0))
    elif stall_force is not None:
        fields["stall_force"] = stall_force
    return _build(model, bodies, "motor", g, 1.0, (0.0, 0.0, 0.0), ctrl_range, force_range, **fields)


def position_servos(model: Model, joints: Sequence[str] | None = None, *, kp, kv=0.0, gear=1.0,
                    ctrl_range=(-np.inf, np.inf), force_range=None) -> Actuators:
    """PD position servos: ``f = k_p (u − l) − k_v l̇`` with ``l = gear · q``, the control
    ``u`` the target position (MJCF ``<position kp kv>``)."""
    bodies = one_dof_joints(model, joints)
    n = len(bodies)
    kp, kv = _per_actuator(kp, n, "kp"), _per_actuator(kv, n, "kv")
    bias = np.stack([np.zeros(n), -kp, -kv], axis=-1)
    return _build(model, bodies, "position", gear, kp, bias, ctrl_range, force_range)


def velocity_servos(model: Model, joints: Sequence[str] | None = None, *, kv, gear=1.0,
                    ctrl_range=(-np.inf, np.inf), force_range=None) -> Actuators:
    """Velocity servos: ``f = k_v (u − l̇)``, the control ``u`` the target velocity (MJCF
    ``<velocity kv>``)."""
    bodies = one_dof_joints(model, joints)
    kv = _per_actuator(kv, len(bodies), "kv")
    bias = np.stack([np.zeros_like(kv), np.zeros_like(kv), -kv], axis=-1)
    return _build(model, bodies, "velocity", gear, kv, bias, ctrl_range, force_range)


def pd_servos(model: Model, joints: Sequence[str] | None = None, *, kp, kv) -> Actuators:
    """Servos a policy commands with targets and a feed-forward torque.

    Per joint, three actuators on its dof: ``τ = k_p (q* − q) + k_v (v* − v) + τ_ff``, with the
    control laid out as ``[q* (n), v* (n), τ_ff (n)]`` (:func:`servo_control` builds it).  The
    sum is clipped to the joints' effort limits (:mod:`sodyn.simulate.actuation`); the gains
    are stepped implicitly.  Gravity compensation is the feed-forward ``τ_ff =
    sodyn.gravity_forces(model, q)[iv]`` with ``iq, iv = servo_indices(model, actuators)``:

        servo_control(q_goal[iq], feedforward=sodyn.gravity_forces(model, state.q)[iv])
    """
    bodies = one_dof_joints(model, joints)
    n = len(bodies)
    kp, kv = _per_actuator(kp, n, "kp"), _per_actuator(kv, n, "kv")
    zero = np.zeros(n)
    joint_names = [model.joint_names[k] for k in bodies]
    names = ([f"{j}:position" for j in joint_names] + [f"{j}:velocity" for j in joint_names]
             + [f"{j}:feedforward" for j in joint_names])
    inf = np.array([-np.inf, np.inf])
    bias = np.concatenate([np.stack([zero, -kp, zero], -1), np.stack([zero, zero, -kv], -1), np.zeros((n, 3))])
    return _build(model, bodies * 3, ("position",) * n + ("velocity",) * n + ("motor",) * n, 1.0,
                  np.concatenate([kp, kv, np.ones(n)]), bias, inf, inf, names=names)


def servo_control(q_target, v_target=None, feedforward=None) -> jax.Array:
    """The control of :func:`pd_servos`: ``[q*, v*, τ_ff]`` (``v*`` and ``τ_ff`` default to zero;
    the servoed joints' values, in the order the servos were built)."""
    q_target = jnp.asarray(q_target)
    zero = jnp.zeros_like(q_target)
    v_target = zero if v_target is None else jnp.asarray(v_target, q_target.dtype)
    feedforward = zero if feedforward is None else jnp.asarray(feedforward, q_target.dtype)
    for x, name in ((v_target, "v_target"), (feedforward, "feedforward")):
        if x.shape != q_target.shape:
            raise ValueError(f"{name} must have the shape of q_target {q_target.shape}, got {x.shape}")
    return jnp.concatenate([q_target, v_target, feedforward], axis=-1)


def servo_indices(model: Model, actuators: Actuators) -> tuple[np.ndarray, np.ndarray]:
    """The ``q`` and ``v`` indices of the joints of :func:`pd_servos` (``q[iq]`` are the
    positions ``q*`` refers to, ``tau[iv]`` the feed-forward torques), in servo order."""
    n = len(actuators) // 3
    if len(actuators) % 3 or actuators.kind[:n] != ("position",) * n:
        raise ValueError("servo_indices takes the actuators of pd_servos")
    iv = np.asarray(actuators.dof[:n], dtype=np.int32)
    return q_index(model, iv), iv


def dc_motors(model: Model, joints: Sequence[str] | None = None, *, torque_constant, resistance, voltage,
              gear=1.0, back_emf=None, current_limit=np.inf, control: str = "voltage") -> Actuators:
    """Geared DC motors: motor torque ``f = K_t i``, joint torque ``τ = N f`` (``gear`` ``N``),
    motor speed ``l̇ = N q̇``, armature current ``i = (V − K_e l̇) / R``.

    ``control="voltage"``: the control is the terminal voltage ``V ∈ [−V_max, V_max]``, so
    ``f = (K_t/R) V − (K_t K_e/R) l̇`` (an affine actuator: gain ``K_t/R``, velocity bias
    ``−K_t K_e/R``).  ``control="current"``: the control is the commanded current, ``f = K_t u``,
    within the current the supply can drive, ``|R i + K_e l̇| ≤ V_max``: the torque–speed
    envelope ``τ_s = K_t V_max / R``, ``β = K_t K_e / R``.  Either way ``|i| ≤ current_limit``.
    At stall ``f = K_t V / R``; the no-load speed is ``l̇ = V / K_e``.  ``back_emf`` ``K_e``
    defaults to ``K_t`` (SI units).
    """
    bodies = one_dof_joints(model, joints)
    n = len(bodies)
    kt, r = _per_actuator(torque_constant, n, "torque_constant"), _per_actuator(resistance, n, "resistance")
    ke = kt if back_emf is None else _per_actuator(back_emf, n, "back_emf")
    v_max, i_max = _per_actuator(voltage, n, "voltage"), _per_actuator(current_limit, n, "current_limit")
    for x, name in ((kt, "torque_constant"), (r, "resistance"), (ke, "back_emf"), (v_max, "voltage"),
                    (i_max, "current_limit")):
        if np.any(~(x > 0)):
            raise ValueError(f"dc_motors: {name} must be positive, got {x}")
    force = np.stack([-kt * i_max, kt * i_max], axis=-1)
    zero = np.zeros(n)
    if control == "voltage":
        bias = np.stack([zero, zero, -kt * ke / r], axis=-1)
        return _build(model, bodies, "dc_motor", gear, kt / r, bias, np.stack([-v_max, v_max], -1), force)
    if control == "current":
        return _build(model, bodies, "dc_motor", gear, kt, np.zeros((n, 3)), np.stack([-i_max, i_max], -1), force,
                      stall_force=kt * v_max / r, back_emf=kt * ke / r)
    raise ValueError(f"dc_motors: control must be 'voltage' or 'current', got {control!r}")


__all__ = ["dc_motors", "motors", "pd_servos", "position_servos", "servo_control", "servo_indices", "velocity_servos"]
