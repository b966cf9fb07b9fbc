"""Rollouts: many steps as one ``lax.scan``, with controls or a policy, and nested
checkpointing for long horizons."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.sensor_readings import sensor_readings
from sodyn.simulate.actuation import control_size
from sodyn.simulate.checks import (
    StateWatch,
    check_checks_option,
    checked_controls,
    checked_dt,
    checked_quaternions,
    raise_first,
    traced,
)
from sodyn.simulate.joint_forces import JointForces
from sodyn.simulate.state import State
from sodyn.simulate.step_size import warn_if_stiff
from sodyn.simulate.stepping import (
    advance,
    check_dt,
    check_state_value,
    check_step_options,
    resolve_forces,
)

Policy = Callable[[object, jax.Array, State], jax.Array]


class Rollout(NamedTuple):
    """A trajectory of ``steps`` steps: the ``states`` after each step (a :class:`State`
    with leading axis ``steps``), the ``controls`` applied ``(steps, nu)``, the applied
    generalised forces ``tau`` ``(steps, nv)`` (actuators and joint forces: limits, friction
    loss, springs, damping) and the world-frame ``contact_force`` of each contact slot
    ``(steps, nc, 3)``: the force on the slot's body 2, body 1 taking the opposite (``None``
    without contact; inactive slots carry zero), the force each step applied
    (:class:`~sodyn.simulate.StepForces`; with a :class:`~sodyn.simulate.RigidContact`: the
    step's impulse over ``dt``), and the loop
    closures' joint-space force ``G_c* λ`` ``(steps, nv)`` (``None`` without them) and the
    joint-limit forces ``limit_force`` ``(steps, nv)`` (part of ``tau``).  ``tau`` and
    ``limit_force`` are the forces each step applied (:class:`~sodyn.simulate.StepForces`; the
    states' activations are ``states.act``).  ``sensors (steps, total_dim)``: the readings of
    the sensors at each step's start state with its acceleration and forces, as MuJoCo's
    ``sensordata`` after ``mj_step`` (``None`` without sensors).  ``velocity_limit_force
    (steps, nv)``: the joint velocity limits' share of ``tau`` (brake and clip,
    :class:`~sodyn.simulate.StepForces`; ``None`` without ``JointForces(velocity_limits=True)``).
    Slot ``i``
    of a :class:`~sodyn.simulate.ContactModel` belongs to its candidate pair
    ``contact.slots.pair[i]``, between geoms ``contact.slots.geom1[i]`` and ``geom2[i]``; of a
    :class:`~sodyn.simulate.GroundContact`, to its point ``i``."""

    states: State
    controls: jax.Array
    tau: jax.Array
    contact_force: jax.Array | None
    constraint_force: jax.Array | None = None
    limit_force: jax.Array | None = None
    sensors: jax.Array | None = None
    velocity_limit_force: jax.Array | None = None


def _per_step(x, steps: int, shape: tuple[int, ...], name: str, dtype) -> jax.Array | None:
    """``x`` as a ``(steps, *shape)`` array (``None`` stays ``None``; one value is repeated)."""
    if x is None:
        return None
    a = jnp.asarray(x, dtype)
    if a.shape == shape:
        return jnp.broadcast_to(a, (steps, *shape))
    if a.shape != (steps, *shape):
        raise ValueError(f"{name} must have shape {(steps, *shape)} (or {shape}, held), got {a.shape}")
    return a


def rollout(model: Model, state: State, controls: jax.Array | Policy | None, dt, steps: int, *,
            params=None, integrator: str = "implicit", contact=None, actuators: Actuators | None = None,
            joint_forces: JointForces | None = None, f_ext=None, substeps: int = 1,
            checkpoint: int | None = None, checked: bool = False, constraints=None,
            checks: str = "cheap", fluid=None, sensors=None, sensor_key=None, observe: str = "state") -> Rollout:
    """Simulate ``steps`` steps of ``dt`` from ``state`` with :func:`~sodyn.simulate.step`.

    ``controls``: ``None`` (zero), an array ``(steps, nu)`` (``nu`` = actuators, or ``nv``
    generalised forces without them), or a policy ``control = policy(params, t, state)``
    called at the start of each step (``params`` is passed through, so ``jax.grad`` with
    respect to it trains the policy).  ``observe`` says what the policy sees: ``"state"``
    (default), ``"sensors"`` (``policy(params, t, readings)``) or ``"both"`` (``policy(params,
    t, state, readings)``), ``readings`` those of the previous step (:class:`Rollout`'s
    ``sensors``, the lag of MuJoCo's ``sensordata``; before the first step, the initial state's
    with zero acceleration and forces).  ``sensors`` (default ``model.sensors``;
    :class:`~sodyn.sensors.Sensors`; ``False``: read none) with ``sensor_key`` (a PRNG key:
    each step's noise from ``fold_in(key, step)``; ``None``: no noise).  ``f_ext``: external body-frame wrenches,
    ``(n_bodies, 6)`` held or ``(steps, n_bodies, 6)`` per step.  The other keywords are
    :func:`~sodyn.simulate.step`'s (``constraints``: loop closures).  The state is cast to the
    model's dtype (:meth:`State.initial`); the ``t`` of the ``k``-th state is ``t0 + k·dt``
    (:func:`step_times`), not a running sum.

    Each step is rematerialised in reverse mode (:func:`~sodyn.simulate.stepping.advance`):
    for its backward pass ``jax.grad`` keeps, per step, the state and the forward-dynamics
    factors, not the step's intermediates.  ``checkpoint=c`` splits the scan into segments of
    ``c`` steps whose states and factors are recomputed in the backward pass
    (``jax.checkpoint``): the memory grows as ``steps / c + c`` of them instead of ``steps``,
    for about one more forward pass of time.  The gradient equals the one without
    ``checkpoint`` to round-off in the same dtype, not bit for bit: the recomputed steps run in
    a different XLA program (the reverse pass) than the forward pass whose forward-dynamics
    factors the plain gradient reuses, and XLA's fusion choices change the last bits.  The
    adjoint of a stiff contact rollout amplifies such last-bit differences like any other
    round-off (Solo12 dropped on the ground from z = 0.3: ×10³ at 300 steps, ×10⁷ at 1000), so the
    two gradients differ by as much as float32's own error does (tests/test_simulate.py):
    float64 relative differences of 8e-13 (300 steps) and 8e-9 (1000 steps); float32 3e-4
    and 4e-2, against 2e-3 and 1.0 between float32 and float64.

    Float32 gradients of long contact rollouts are not reliable: for a 1000-step Solo12
    rollout dropped on the ground (1 ms, four feet, :class:`~sodyn.simulate.GroundContact`,
    random torques) the float32 gradient has a cosine of 0.04 with the float64 one (0.999999
    at 300 steps); the two trajectories themselves part after a few hundred steps of
    contact.  Differentiate long contact rollouts in float64 (``model.astype(jnp.float64)``
    under ``jax_enable_x64``), or keep float32 horizons short (a receding horizon or multiple
    shooting of ≤ 300 steps), and check a gradient's float32/float64 cosine before trusting
    it.

    ``checks`` (:mod:`sodyn.simulate.checks`; all hold under ``jax.jit`` and ``vmap``):
    ``"cheap"`` (default) raises at run time on a non-positive or non-finite ``dt``, a zero or
    non-finite quaternion in the initial ``q`` and a non-finite control (naming its index and
    step; a policy's controls are checked each step); ``"full"`` also watches every state and
    raises after the scan naming the step and the first quantity that went non-finite (a
    control index, or the ``q``/``v`` of a joint, whichever came first); ``"off"`` checks
    nothing.  ``checked=True`` is ``checks="full"``; it works under ``jax.jit`` (the error is
    then a ``jax.errors.JaxRuntimeError`` carrying the message) and eagerly raises
    ``FloatingPointError``.
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if checkpoint is not None and (not isinstance(checkpoint, int) or isinstance(checkpoint, bool) or checkpoint < 1):
        raise ValueError(f"checkpoint must be a positive integer number of steps or None, got {checkpoint!r}")
    check_step_options(integrator, substeps)
    checks = "full" if checked else check_checks_option(checks)
    check_dt(dt)
    if observe not in ("state", "sensors", "both"):
        raise ValueError(f"observe must be 'state', 'sensors' or 'both', got {observe!r}")
    forces = resolve_forces(model, actuators, joint_forces, contact, constraints, fluid, sensors)
    if observe != "state" and forces.sensors is None:
        raise ValueError(f"observe={observe!r} needs sensors: the model has none and none were given (sensors=)")
    state = check_state_value(model, state, forces)
    dtype = state.q.dtype
    warn_if_stiff(model, forces, dt, substeps, integrator, stacklevel=2)
    nu = control_size(model, forces.actuators)
    policy = controls if callable(controls) else None
    control_xs = None if policy is not None else _per_step(
        jnp.zeros(nu, dtype) if controls is None else controls, steps, (nu,), "controls", dtype)
    if controls is not None and control_xs is not None and jnp.ndim(controls) == 1:
        raise ValueError(f"controls must have shape ({steps}, {nu}), got {jnp.shape(controls)}")
    f_xs = _per_step(f_ext, steps, (model.n_bodies, 6), "f_ext", dtype)
    dt_lo = _low_part(dt, dtype)
    dt = jnp.asarray(dt, dtype)
    t0 = state.t
    watch = StateWatch(model, nu) if checks == "full" else None
    if checks != "off":
        dt = checked_dt(dt)
        state = State(checked_quaternions(model, state.q), state.v, state.t, state.act)
        if control_xs is not None and checks == "cheap":
            control_xs = checked_controls(control_xs, first_step=1)

    def noisy(index):
        """The step's forces with its sensor noise key."""
        if sensor_key is None or forces.sensors is None:
            return forces
        return dataclasses.replace(forces, sensor_key=jax.random.fold_in(sensor_key, index))

    def one_step(carry, x):
        s, first, seen = carry
        index, u, f = x
        if policy is not None:
            inputs = {"state": (s,), "sensors": (seen,), "both": (s, seen)}[observe]
            u = jnp.asarray(policy(params, s.t, *inputs), dtype)
            if u.shape != (nu,):
                raise ValueError(f"the policy must return a control of shape ({nu},), got {u.shape}")
            if checks == "cheap":
                first = jnp.where(first >= 0, first, _first_bad_control(index, u))
        new, rec = advance(model, noisy(index), s, u, f, dt, integrator, substeps)
        new = State(new.q, new.v, step_times(t0, index, dt, dt_lo), new.act)
        if watch is not None:
            first = watch.update(first, index, u, new.q, new.v)
        tau = rec.actuator + rec.joint
        return (new, first, seen if rec.sensors is None else rec.sensors), (new, u, tau, rec.contact, rec.constraint,
                                                                            rec.limit, rec.sensors,
                                                                            rec.velocity_limit)

    carry = (state, jnp.asarray(-1, jnp.int32), _initial_readings(model, forces, state, noisy(0)))
    xs = (jnp.arange(1, steps + 1, dtype=jnp.int32), control_xs, f_xs)
    if checkpoint is None or checkpoint >= steps:
        (_, first, _), out = jax.lax.scan(one_step, carry, xs)
    else:
        first, out = _checkpointed_scan(one_step, carry, xs, steps, checkpoint)
    out = Rollout(*out)
    if watch is not None:
        if traced((out, first)):
            return watch.raise_if(out, first)
        try:
            return watch.raise_if(out, first)
        except Exception as err:  # noqa: BLE001 - eagerly, a failed check is re-raised plainly
            raise FloatingPointError(_check_message(err)) from None
    if policy is not None and checks == "cheap":
        out = raise_first(out, first, tuple(f"control {i} (from the policy)" for i in range(nu)))
    return out


def _initial_readings(model: Model, forces, state: State, noisy) -> jax.Array | None:
    """The sensors' readings at the initial state with zero acceleration and forces (what a
    policy observing sensors sees before the first step)."""
    if forces.sensors is None:
        return None
    dtype = state.q.dtype
    na = control_size(model, forces.actuators)
    zero = jnp.zeros((model.n_bodies, 6), dtype)
    return sensor_readings(model, forces.sensors, state.q, state.v, jnp.zeros(model.nv, dtype),
                           actuator_force=jnp.zeros(na, dtype), joint_actuator_force=jnp.zeros(model.nv, dtype),
                           f_ext=zero, contact_wrench=zero, t=state.t, key=noisy.sensor_key)


def _first_bad_control(step, u) -> jax.Array:
    bad = ~jnp.isfinite(u)
    return jnp.where(jnp.any(bad), step * u.shape[0] + jnp.argmax(bad), -1).astype(jnp.int32)


def _check_message(err: Exception) -> str:
    """The message of a failed check (:mod:`sodyn.simulate.checks`) in an error's text."""
    found = re.findall(r"(non-finite .*|dt must be a positive.*|q: the quaternion.*)", str(err))
    return found[-1].strip() if found else str(err)


def _low_part(dt, dtype) -> jax.Array:
    """``dt − fl(dt)`` in ``dtype``: what rounding a concrete (Python, float64) ``dt`` to
    ``dtype`` lost (0 for a traced ``dt`` or one already in ``dtype``)."""
    if traced(dt):
        return jnp.zeros((), dtype)
    try:
        exact = np.asarray(dt, np.float64)
    except (TypeError, ValueError):
        return jnp.zeros((), dtype)
    if exact.shape != ():
        return jnp.zeros((), dtype)
    return jnp.asarray(exact - np.asarray(exact, np.dtype(dtype)).astype(np.float64), dtype)


def _split(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Veltkamp split ``a = hi + lo``, each with half the mantissa (exact)."""
    c = jnp.asarray(2.0 ** ((jnp.finfo(a.dtype).nmant + 2) // 2) + 1.0, a.dtype)
    t = c * a
    hi = t - (t - a)
    return hi, a - hi


def step_times(t0: jax.Array, k: jax.Array, dt: jax.Array, dt_lo: jax.Array) -> jax.Array:
    """``t0 + k·dt`` with the product ``k·(dt + dt_lo)`` rounded once (Dekker's exact product
    ``k·dt = p + e``; ``dt_lo`` is the part of a Python ``dt`` the dtype lost, :func:`_low_part`).

    A running sum ``t += dt`` makes ``k`` roundings (float32 ``t`` after ``10⁵`` steps of 1 ms
    reads 99.999 or 100.004); this reads ``100.0``.  ``k`` is exact in float32 up to 2²⁴."""
    kf = k.astype(dt.dtype)
    p = kf * dt
    kh, kl = _split(kf)
    dh, dl = _split(dt)
    e = ((kh * dh - p) + kh * dl + kl * dh) + kl * dl
    return t0 + (p + (e + kf * dt_lo))


def _checkpointed_scan(one_step, carry, xs, steps: int, segment: int):
    """``lax.scan`` of ``one_step`` as an outer scan over checkpointed segments of ``segment``
    steps (and one shorter checkpointed segment for the remainder); returns the final carry's
    second item and the stacked outputs."""

    @jax.checkpoint
    def run_segment(c, xseg):
        return jax.lax.scan(one_step, c, xseg)

    n_full = steps // segment
    head = jax.tree_util.tree_map(lambda x: x[: n_full * segment].reshape((n_full, segment) + x.shape[1:]), xs)
    carry, out = jax.lax.scan(run_segment, carry, head)
    out = jax.tree_util.tree_map(lambda x: x.reshape((n_full * segment,) + x.shape[2:]), out)
    if steps % segment:
        tail = jax.tree_util.tree_map(lambda x: x[n_full * segment:], xs)
        carry, rest = run_segment(carry, tail)
        out = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), out, rest)
    return carry[1], out


__all__ = ["Policy", "Rollout", "rollout", "step_times"]
