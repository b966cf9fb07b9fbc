"""Rollouts: many steps as one ``lax.scan``, with controls or a policy, and nested
checkpointing for long horizons."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.simulate.actuation import control_size
from sodyn.simulate.joint_forces import JointForces
from sodyn.simulate.state import State
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
    without contact; inactive slots carry zero), each evaluated at the start of its step (with
    a :class:`~sodyn.simulate.RigidContact`: the step's impulse over ``dt``), and the loop
    closures' joint-space force ``G_c* λ`` ``(steps, nv)`` (``None`` without them).  Slot ``i``
    of a :class:`~sodyn.simulate.ContactModel` belongs to its candidate pair
    ``contact.slots.pair[i]``, between geoms ``contact.slots.geom1[i]`` and ``geom2[i]``; of a
    :class:`~sodyn.simulate.GroundContact`, to its point ``i``."""

    states: State
    controls: jax.Array
    tau: jax.Array
    contact_force: jax.Array | None
    constraint_force: jax.Array | None = None


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
            checkpoint: int | None = None, checked: bool = False, constraints=None) -> Rollout:
    """Simulate ``steps`` steps of ``dt`` from ``state`` with :func:`~sodyn.simulate.step`.

    ``controls``: ``None`` (zero), an array ``(steps, nu)`` (``nu`` = actuators, or ``nv``
    generalised forces without them), or a policy ``control = policy(params, t, state)``
    called at the start of each step (``params`` is passed through, so ``jax.grad`` with
    respect to it trains the policy).  ``f_ext``: external body-frame wrenches,
    ``(n_bodies, 6)`` held or ``(steps, n_bodies, 6)`` per step.  The other keywords are
    :func:`~sodyn.simulate.step`'s (``constraints``: loop closures).

    Each step is rematerialised in reverse mode (:func:`~sodyn.simulate.stepping.advance`):
    for its backward pass ``jax.grad`` keeps, per step, the state and the forward-dynamics
    factors, not the step's intermediates.  ``checkpoint=c`` splits the scan into segments of
    ``c`` steps whose states and factors are recomputed in the backward pass
    (``jax.checkpoint``): the memory grows as ``steps / c + c`` of them instead of ``steps``,
    for about one more forward pass of time.

    ``checked=True`` runs the rollout eagerly under ``checkify`` and raises at the first
    non-finite state (naming the step and joint), non-unit quaternion or non-positive ``dt``.
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if checkpoint is not None and (not isinstance(checkpoint, int) or isinstance(checkpoint, bool) or checkpoint < 1):
        raise ValueError(f"checkpoint must be a positive integer number of steps or None, got {checkpoint!r}")
    check_step_options(integrator, substeps)
    check_dt(dt)
    state = check_state_value(model, state)
    dtype = state.q.dtype
    forces = resolve_forces(model, actuators, joint_forces, contact, constraints)
    nu = control_size(model, forces.actuators)
    policy = controls if callable(controls) else None
    control_xs = None if policy is not None else _per_step(
        jnp.zeros(nu, dtype) if controls is None else controls, steps, (nu,), "controls", dtype)
    if controls is not None and control_xs is not None and jnp.ndim(controls) == 1:
        raise ValueError(f"controls must have shape ({steps}, {nu}), got {jnp.shape(controls)}")
    f_xs = _per_step(f_ext, steps, (model.n_bodies, 6), "f_ext", dtype)
    dt = jnp.asarray(dt, dtype)

    def one_step(s: State, x):
        index, u, f = x
        if policy is not None:
            u = jnp.asarray(policy(params, s.t, s), dtype)
            if u.shape != (nu,):
                raise ValueError(f"the policy must return a control of shape ({nu},), got {u.shape}")
        new, rec = advance(model, forces, s, u, f, dt, integrator, substeps)
        if checked:
            _check_state(model, new, index)
        tau = rec.actuator + rec.joint
        return new, (new, u, tau, rec.contact, rec.constraint)

    def run(state: State, dt):
        xs = (jnp.arange(1, steps + 1), control_xs, f_xs)
        if checked:
            checkify.check(dt > 0, "dt must be positive, got {dt}", dt=dt)
            _check_state(model, state, jnp.zeros((), jnp.int32))
        if checkpoint is None or checkpoint >= steps:
            _, out = jax.lax.scan(one_step, state, xs)
        else:
            out = _checkpointed_scan(one_step, state, xs, steps, checkpoint)
        return Rollout(*out)

    if not checked:
        return run(state, dt)
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((state, dt))):
        raise ValueError("checked=True runs the rollout eagerly and raises on the first bad state: "
                         "call it outside jax.jit/vmap/grad")
    err, out = jax.jit(checkify.checkify(run, errors=checkify.user_checks))(state, dt)
    message = err.get()
    if message is not None:
        raise FloatingPointError(_name_joint(model, message))
    return out


def _checkpointed_scan(one_step, state: State, xs, steps: int, segment: int):
    """``lax.scan`` of ``one_step`` as an outer scan over checkpointed segments of ``segment``
    steps (and one shorter checkpointed segment for the remainder)."""

    @jax.checkpoint
    def run_segment(s, xseg):
        return jax.lax.scan(one_step, s, xseg)

    n_full = steps // segment
    head = jax.tree_util.tree_map(lambda x: x[: n_full * segment].reshape((n_full, segment) + x.shape[1:]), xs)
    state, out = jax.lax.scan(run_segment, state, head)
    out = jax.tree_util.tree_map(lambda x: x.reshape((n_full * segment,) + x.shape[2:]), out)
    if steps % segment:
        tail = jax.tree_util.tree_map(lambda x: x[n_full * segment:], xs)
        _, rest = run_segment(state, tail)
        out = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), out, rest)
    return out


def _quaternion_slices(model: Model) -> list[tuple[int, int]]:
    """Static ``(start, joint)`` of each quaternion in ``q``."""
    out = []
    for k, t in enumerate(model.joint_types):
        kernel = KERNEL_OF.get(t)
        if kernel in ("spherical", "free"):
            out.append((int(model.topology.q_start[k]) + (3 if kernel == "free" else 0), k))
    return out


def _check_state(model: Model, s: State, index) -> None:
    """``checkify`` checks of one state: finite ``q`` and ``v`` (first bad dof named by its
    index, see :func:`_name_joint`) and unit quaternions."""
    bad_v = ~jnp.isfinite(s.v)
    bad_q = ~jnp.isfinite(s.q)
    dof_of_q = np.zeros(model.nq, dtype=np.int32)
    for k in range(model.n_bodies):
        qs, vs = model.joint_q_slice(k), model.joint_v_slice(k)
        dof_of_q[qs] = vs.start
    bad = bad_v.at[dof_of_q].max(bad_q)
    checkify.check(~jnp.any(bad), "non-finite state at step {step}: first non-finite dof {dof}",
                   step=index, dof=jnp.argmax(bad))
    tol = 1e-6 if s.q.dtype == jnp.float64 else 1e-3
    for start, k in _quaternion_slices(model):
        norm = jnp.sqrt(jnp.sum(s.q[start:start + 4] ** 2))
        checkify.check(jnp.abs(norm - 1) < tol,
                       f"quaternion of joint {model.joint_names[k]!r} has norm {{norm}} at step {{step}}",
                       norm=norm, step=index)


def _name_joint(model: Model, message: str) -> str:
    """Append the joint name to a checkify message that names a dof index."""
    match = re.search(r"first non-finite dof (\d+)", message)
    if not match:
        return message
    dof = int(match.group(1))
    for k in range(model.n_bodies):
        vs = model.joint_v_slice(k)
        if vs.start <= dof < vs.stop:
            return f"{message} (joint {model.joint_names[k]!r})"
    return message


__all__ = ["Policy", "Rollout", "rollout"]
