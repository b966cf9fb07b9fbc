"""Actuators: controls and activations to generalised forces (:class:`~sodyn.Actuators`).

With ``u = clip(control, ctrl_range)``, length ``l = gear · q[dof]``, velocity ``l̇ = gear ·
v[dof]`` and input ``w`` (``u``, or the activation ``a`` of an actuator with dynamics), MuJoCo's
affine actuator is

    f = clip(g · w + b₀ + b₁ l + b₂ l̇, F(l̇)),     g = g₀ + g₁ l + g₂ l̇,      τ[dof] += gear · f

with the force range ``F(l̇)`` of :class:`~sodyn.Actuators` (``force_range`` ∩ the torque–speed
envelope ``[−τ_s − β l̇, τ_s − β l̇]`` ∩ the power limit ``|f l̇| ≤ P`` where ``f l̇ > 0``).  The
total actuator force on a dof is then clipped to ``±effort_limit`` (URDF ``effort``, MJCF
``actuatorfrcrange``), as MuJoCo clips ``qfrc_actuator``.  Without actuators the control is the
generalised force itself, clipped to the effort limits.

Activations (``State.act``, the actuators with dynamics in order) change at

    ȧ = u  (``"integrator"``),      ȧ = (u − a) / τ  (``"filter"``, ``"filterexact"``)

and :func:`next_activation` advances them over a step ``dt``: ``a + dt ȧ``, or ``a + (u − a)(1 −
e^{−dt/τ})`` for ``"filterexact"``, clipped to ``act_range`` (MuJoCo's ``mj_nextActivation``);
an ``act_early`` actuator's force uses that next activation.

:func:`actuator_forces` also returns the per-dof slopes ``−∂τ/∂q`` and ``−∂τ/∂v`` (from the gain
and bias, or from the saturated bound of the force range: the envelope's ``β``, the power limit's
``P / l̇²``), which the implicit stepper treats implicitly.  An actuator on a fixed tendon
(``Actuators.tendon``, :mod:`sodyn.simulate.tendons`) has ``l = gear · L``, ``l̇ = gear · J v`` and
adds ``gear · f · Jᵀ``; its slopes enter as the diagonals of ``Jᵀ (…) J``, and a tendon's
``actuator_force_range`` scales the forces of the actuators on it
(:class:`~sodyn.simulate.tendons.Tendons`).  The builders (:func:`motors`,
:func:`position_servos`, :func:`pd_servos`, :func:`dc_motors`…) are in
:mod:`sodyn.simulate.actuator_builders`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.static_index import spread_sum


class ActuatorTerms(NamedTuple):
    """Generalised force ``force (nv,)``, its stiffness ``−∂τ/∂q`` and damping ``−∂τ/∂v`` per
    dof (``(nv,)``), each actuator's force ``actuator_force (na,)`` and the activations' rate
    ``act_dot`` (``(n_act,)``, :attr:`~sodyn.Actuators.n_act`)."""

    force: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    actuator_force: jax.Array
    act_dot: jax.Array


def _dynamic_index(actuators: Actuators) -> np.ndarray:
    """Static indices of the actuators with activation dynamics (the order of ``State.act``)."""
    return np.array([i for i, d in enumerate(actuators.dynamics) if d != "none"], dtype=np.int32)


def activation_rate(actuators: Actuators, u: jax.Array, act: jax.Array) -> jax.Array:
    """``ȧ`` of the actuators with dynamics (module docstring) at clipped controls ``u (na,)``."""
    idx = _dynamic_index(actuators)
    if not len(idx):
        return jnp.zeros(0, u.dtype)
    integrator = np.array([actuators.dynamics[i] == "integrator" for i in idx])
    tau = actuators.time_constant[idx]
    return jnp.where(integrator, u[idx], (u[idx] - act) / jnp.where(integrator, 1.0, tau))


def next_activation(actuators: Actuators, act: jax.Array, act_dot: jax.Array, dt) -> jax.Array:
    """The activations after a step ``dt`` (module docstring), clipped to ``act_range``."""
    idx = _dynamic_index(actuators)
    if not len(idx):
        return act
    exact = np.array([actuators.dynamics[i] == "filterexact" for i in idx])
    tau = jnp.where(exact, actuators.time_constant[idx], 1.0)
    span = jnp.where(exact, tau * -jnp.expm1(-dt / tau), dt)
    return jnp.clip(act + span * act_dot, actuators.act_range[idx, 0], actuators.act_range[idx, 1])


def _force_range(act: Actuators, rate: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The force range ``[lo, hi]`` at actuator velocity ``rate`` and the bounds' slopes
    ``∂lo/∂l̇``, ``∂hi/∂l̇`` (module docstring)."""
    lo, hi = act.force_range[:, 0], act.force_range[:, 1]
    zero = jnp.zeros_like(rate)
    d_lo, d_hi = zero, zero
    beta = act.back_emf
    env_hi, env_lo = act.stall_force - beta * rate, -act.stall_force - beta * rate
    d_hi = jnp.where(env_hi < hi, -beta, d_hi)
    hi = jnp.minimum(hi, env_hi)
    d_lo = jnp.where(env_lo > lo, -beta, d_lo)
    lo = jnp.maximum(lo, env_lo)
    power = act.power_limit
    finite = jnp.isfinite(power)
    speed = jnp.where(rate != 0, jnp.abs(rate), 1.0)
    p_bound = jnp.where(finite, power, 0.0) / speed
    p_slope = -p_bound / speed * jnp.sign(rate)    # ∂(±P/|l̇|)/∂l̇ on the driving side
    cap_hi = finite & (rate > 0) & (p_bound < hi)
    cap_lo = finite & (rate < 0) & (-p_bound > lo)
    hi, d_hi = jnp.where(cap_hi, p_bound, hi), jnp.where(cap_hi, p_slope, d_hi)
    lo, d_lo = jnp.where(cap_lo, -p_bound, lo), jnp.where(cap_lo, p_slope, d_lo)
    return lo, hi, d_lo, d_hi


def actuator_forces(model: Model, actuators: Actuators | None, q: jax.Array, v: jax.Array, control: jax.Array,
                    act: jax.Array | None = None, dt=None) -> ActuatorTerms:
    """The generalised actuator force for ``control`` ``(na,)`` (``(nv,)`` without actuators) and
    activations ``act`` ``(n_act,)`` (zeros when ``None``); ``dt`` is needed by ``act_early``
    actuators."""
    dtype = q.dtype
    effort = model.effort_limit.astype(dtype)
    limit = jnp.where(effort > 0, effort, jnp.inf)  # a zero effort means "not given"
    if actuators is None:
        tau = jnp.clip(control, -limit, limit)
        zero = jnp.zeros(model.nv, dtype)
        return ActuatorTerms(tau, zero, zero, tau, jnp.zeros(0, dtype))
    a = jax.tree_util.tree_map(lambda x: x.astype(dtype), actuators)
    dof = np.asarray(a.dof, dtype=np.int32)
    idx = _dynamic_index(a)
    act = jnp.zeros(len(idx), dtype) if act is None else act
    u = jnp.clip(control, a.ctrl_range[:, 0], a.ctrl_range[:, 1])
    act_dot = activation_rate(a, u, act)
    w = u
    if len(idx):
        early = np.array([a.act_early[i] for i in idx])
        used = act
        if early.any():
            if dt is None:
                raise ValueError("actuators with act_early need the step's dt")
            used = jnp.where(early, next_activation(a, act, act_dot, dt), act)
        w = u.at[idx].set(used)
    length, rate, rows = _transmission(model, a, dof, q, v)
    gain = a.gain + a.gain_slope[:, 0] * length + a.gain_slope[:, 1] * rate
    raw = gain * w + a.bias[:, 0] + a.bias[:, 1] * length + a.bias[:, 2] * rate
    lo, hi, d_lo, d_hi = _force_range(a, rate)
    f = jnp.clip(raw, lo, hi)
    df_dl = jnp.where((raw > lo) & (raw < hi), a.gain_slope[:, 0] * w + a.bias[:, 1], 0.0)
    df_drate = jnp.where(raw >= hi, d_hi, jnp.where(raw <= lo, d_lo, a.gain_slope[:, 1] * w + a.bias[:, 2]))
    g2 = a.gear * a.gear
    k, c = jnp.maximum(-g2 * df_dl, 0.0), jnp.maximum(-g2 * df_drate, 0.0)
    if rows is not None:        # a tendon's actuator force range scales its actuators' forces
        from sodyn.simulate.tendons import clamp_tendon_actuators

        f, kept = clamp_tendon_actuators(model, f, rows[1], np.asarray(a.tendon, np.int64)[rows[1]])
        k, c = jnp.where(kept, k, 0.0), jnp.where(kept, c, 0.0)
    if rows is None:
        total = spread_sum(a.gear * f, dof, model.nv)
        stiffness, damping = spread_sum(k, dof, model.nv), spread_sum(c, dof, model.nv)
    else:                       # tendon transmissions: τ += gear f Jᵀ, slopes diag(Jᵀ k J)
        jn, tn, coef = rows
        square = coef * coef
        total = spread_sum((a.gear * f)[jn], dof[jn], model.nv) + (a.gear * f)[tn] @ coef
        stiffness = spread_sum(k[jn], dof[jn], model.nv) + k[tn] @ square
        damping = spread_sum(c[jn], dof[jn], model.nv) + c[tn] @ square
    inside = jnp.abs(total) < limit
    clipped = jnp.clip(total, -limit, limit)
    return ActuatorTerms(clipped, jnp.where(inside, stiffness, 0.0), jnp.where(inside, damping, 0.0), f, act_dot)


def _transmission(model: Model, a: Actuators, dof: np.ndarray, q: jax.Array, v: jax.Array):
    """Actuator lengths and velocities ``(na,)``; with tendon transmissions also the static
    joint and tendon actuator indices and the tendon actuators' moment rows ``J (n, nv)``."""
    tendon = np.asarray(a.tendon, np.int64)
    if not np.any(tendon >= 0):
        return a.gear * q[q_index(model, dof)], a.gear * v[dof], None
    from sodyn.simulate.tendons import tendon_lengths

    if model.tendons is None or tendon.max() >= len(model.tendons):
        raise ValueError(f"actuators on tendons {sorted(set(tendon[tendon >= 0].tolist()))} need the model's "
                         "tendons (Model.tendons)")
    jn, tn = np.flatnonzero(tendon < 0), np.flatnonzero(tendon >= 0)
    coef = model.tendons.coef.astype(q.dtype)[tendon[tn]]
    length = jnp.zeros(len(tendon), q.dtype).at[jn].set(q[q_index(model, dof[jn])])
    length = a.gear * length.at[tn].set(tendon_lengths(model, q)[tendon[tn]])
    rate = a.gear * jnp.zeros(len(tendon), q.dtype).at[jn].set(v[dof[jn]]).at[tn].set(coef @ v)
    return length, rate, (jn, tn, coef)


def q_index(model: Model, dof: np.ndarray) -> np.ndarray:
    """Static ``q`` index of each one-dof joint's ``v`` index."""
    topo = model.topology
    q_of_v = {int(topo.v_start[k]): int(topo.q_start[k]) for k in range(model.n_bodies)}
    return np.array([q_of_v[int(d)] for d in dof], dtype=np.int32)


def control_size(model: Model, actuators: Actuators | None) -> int:
    """Length of a control vector: the number of actuators, or ``nv`` without them."""
    return model.nv if actuators is None else len(actuators)


def activation_size(actuators: Actuators | None) -> int:
    """Length of ``State.act``: the number of actuators with activation dynamics."""
    return 0 if actuators is None else actuators.n_act


__all__ = ["ActuatorTerms", "activation_rate", "activation_size", "actuator_forces", "control_size",
           "next_activation", "q_index"]
