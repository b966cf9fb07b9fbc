"""Time stepping: semi-implicit (symplectic) Euler on the joint manifold, as one ``lax.scan``.

    v_{k+1} = v_k + dt · FD(q_k, v_k, τ_k),     q_{k+1} = q_k ⊕ dt · v_{k+1}

so ``jit``, ``vmap`` (Monte Carlo batches) and ``grad`` (trajectory optimisation) go through
whole rollouts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn.algorithms.articulated import forward_dynamics
from sodyn.algorithms.common import check_vector
from sodyn.configuration import integrate
from sodyn.model import Model


class Trajectory(NamedTuple):
    """States after each step: ``q (steps, nq)``, ``v (steps, nv)``."""

    q: jax.Array
    v: jax.Array


def step(model: Model, q, v, tau, dt: float) -> tuple[jax.Array, jax.Array]:
    """One semi-implicit Euler step."""
    v_next = v + dt * forward_dynamics(model, q, v, tau)
    return integrate(model, q, v_next, dt), v_next


def rollout(
    model: Model,
    q0,
    v0,
    controls: jax.Array | Callable[[jax.Array, jax.Array, jax.Array], jax.Array] | None,
    dt: float,
    steps: int,
) -> Trajectory:
    """Simulate ``steps`` steps from ``(q0, v0)``.

    ``controls`` is ``None`` (zero torque), an array ``(steps, nv)`` of torques, or a policy
    ``tau = policy(t, q, v)`` (traced once; may close over parameters being optimised).
    """
    q0 = check_vector(model, q0, model.nq, "q0")
    v0 = check_vector(model, v0, model.nv, "v0", q0.dtype)
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if callable(controls):
        policy = controls
        xs = jnp.arange(steps) * dt
    else:
        tau = jnp.zeros((steps, model.nv), q0.dtype) if controls is None else jnp.asarray(controls, q0.dtype)
        if tau.shape != (steps, model.nv):
            raise ValueError(f"controls must have shape (steps, nv) = ({steps}, {model.nv}), got {tau.shape}")
        policy = None
        xs = tau

    def body(state, x):
        q, v = state
        u = policy(x, q, v) if policy is not None else x
        q, v = step(model, q, v, u, dt)
        return (q, v), (q, v)

    _, (qs, vs) = jax.lax.scan(body, (q0, v0), xs)
    return Trajectory(qs, vs)
