"""Operational-space control (Khatib; Jain §10.1): task-space PD with a null-space posture.

The torque

    τ = J* (Λ u + μ + p) + (I − J* J̄*) τ₀

makes the closed loop follow the commanded task acceleration ``ẍ = u`` exactly (when ``Λ`` is
not regularized) while ``τ₀`` acts only in the dynamically consistent null space of the
tasks.  ``Λ``, ``J̄ = 𝓜⁻¹ J* Λ`` and the bias ``μ + p = J̄* C − Λ J̇ v`` come from
:func:`sodyn.operational_space_dynamics` (Ω recursions, O(n · T)).  Pure functions of their
arguments: usable inside ``jit``, ``vmap``, ``grad`` and ``lax.scan``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn.algorithms.common import check_vector
from sodyn.algorithms.operational_space import operational_space_dynamics
from sodyn.configuration import difference
from sodyn.model import Model
from sodyn.runtime.precision import full_precision


class OSCOutput(NamedTuple):
    """``tau`` (nv,) joint torques; ``task_force`` ``F = Λ u + μ + p`` (m,); ``null_projector``
    ``Nᵀ = I − J* J̄*`` (nv, nv)."""

    tau: jax.Array
    task_force: jax.Array
    null_projector: jax.Array


def task_pd_acceleration(error, error_rate, kp, kd, feedforward=None) -> jax.Array:
    """Commanded task acceleration ``u = ẍ_d + K_d ė + K_p e`` (gains scalar or per row)."""
    u = kp * jnp.asarray(error) + kd * jnp.asarray(error_rate)
    return u if feedforward is None else u + feedforward


def posture_torque(model: Model, q, v, q_ref, kp, kd) -> jax.Array:
    """Joint-space PD posture torque ``K_p (q_ref ⊖ q) − K_d v`` (on the joint manifold)."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    return kp * difference(model, q, q_ref) - kd * v


@full_precision
def osc_torque(
    model: Model, q, v, tasks, task_acceleration, null_torque=None, regularization=0.0, f_ext=None
) -> OSCOutput:
    """Operational-space control torque for commanded task accelerations ``u`` ``(m,)``.

    ``tasks`` as in :func:`sodyn.operational_space_inertia`.  ``null_torque`` ``τ₀`` (nv,) is
    projected by ``I − J* J̄*`` (e.g. :func:`posture_torque`, optionally plus gravity
    compensation).  ``regularization`` damps ``Λ`` near singularities (see
    :func:`sodyn.operational_space_inertia`); then tracking is approximate.  The velocity
    terms of ``J̇ v`` follow each task's reference: the spatial acceleration for ``"local"``,
    the classical ``[ω̇; p̈]`` for ``"world_aligned"`` (the exact derivative of ``J v``).
    """
    osd = operational_space_dynamics(model, q, v, tasks, regularization, f_ext)
    u = jnp.asarray(task_acceleration, osd.inertia.dtype)
    if u.shape != osd.bias.shape:
        raise ValueError(f"task_acceleration must have shape {osd.bias.shape}, got {u.shape}")
    force = osd.inertia @ u + osd.bias
    nv = osd.jacobian.shape[1]
    null = jnp.eye(nv, dtype=force.dtype) - osd.jacobian.T @ osd.jbar.T
    tau = osd.jacobian.T @ force
    if null_torque is not None:
        tau = tau + null @ jnp.asarray(null_torque, force.dtype)
    return OSCOutput(tau, force, null)
