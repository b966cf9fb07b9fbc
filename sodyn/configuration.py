"""Configurations on the joint manifold: neutral and random configurations, ``integrate``
(``q ⊕ v dt``) and ``difference`` (``q1 ⊖ q0``), vectorised per joint kernel."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import joints
from sodyn.algorithms.common import check_vector
from sodyn.model import Model
from sodyn.topology import dofs_from_levels, dofs_to_levels


def neutral_configuration(model: Model) -> jax.Array:
    """The model's neutral configuration ``model.q_neutral``: zero angles and positions and
    identity quaternions, unless the source says otherwise (MuJoCo's ``qpos0`` for MJCF)."""
    return jnp.asarray(model.q_neutral, dtype=model.mass.dtype)


def _hinge_span(model: Model, scale: float) -> np.ndarray:
    """Per-q half-range used where a hinge has no finite limit (static, from the joint types)."""
    span = np.ones(model.nq)
    for k, t in enumerate(model.joint_types):
        if joints.KERNEL_OF[t] == "hinge":
            span[int(model.topology.q_start[k])] = scale * (np.pi if t in ("revolute", "continuous") else 1.0)
    return span


def random_configuration(model: Model, key: jax.Array, scale: float = 1.0) -> jax.Array:
    """A random configuration, drawn per joint kernel in one vectorised call each.

    Hinges draw uniformly between their limits where finite, else in ``[−scale π, scale π]``
    (prismatic/helical: ``[−scale, scale]``); quaternions are uniform on SO(3); free-joint
    and planar positions draw in ``[−scale, scale]``, planar angles in ``[−π, π]``.
    """
    topo = model.topology
    dtype = model.mass.dtype
    span = jnp.asarray(_hinge_span(model, scale), dtype)
    lower = jnp.where(jnp.isfinite(model.lower_limit), model.lower_limit, -span)
    upper = jnp.where(jnp.isfinite(model.upper_limit), model.upper_limit, span)
    low_blocks = dofs_to_levels(topo, lower, -1.0, which="q")
    high_blocks = dofs_to_levels(topo, upper, 1.0, which="q")
    blocks = []
    for (kernel, _, _), k, low, high in zip(topo.kernel_slots, jax.random.split(key, 4), low_blocks, high_blocks):
        k_pos, k_rot = jax.random.split(k)
        shape = low.shape  # (1, Wk, nq_k)
        if kernel == "hinge":
            blocks.append(jax.random.uniform(k_pos, shape, dtype, low, high))
            continue
        quat = jax.random.normal(k_rot, shape[:2] + (4,), dtype)
        quat = quat / jnp.sqrt(jnp.sum(quat * quat, axis=-1, keepdims=True))
        if kernel == "spherical":
            blocks.append(quat)
        elif kernel == "free":
            position = jax.random.uniform(k_pos, shape[:2] + (3,), dtype, -scale, scale)
            blocks.append(jnp.concatenate([position, quat], -1))
        else:  # planar
            xy = jax.random.uniform(k_pos, shape[:2] + (2,), dtype, -scale, scale)
            blocks.append(jnp.concatenate([xy, jax.random.uniform(k_rot, shape[:2] + (1,), dtype, -np.pi, np.pi)], -1))
    return dofs_from_levels(topo, blocks, which="q")


def integrate(model: Model, q, v, dt=1.0) -> jax.Array:
    """``q ⊕ v dt`` on the joint manifold (see :func:`sodyn.joints.integrate`)."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    topo = model.topology
    qb = dofs_to_levels(topo, q, 1.0, which="q")
    vb = dofs_to_levels(topo, v * dt, 0.0)
    out = [joints.integrate(kn, qk, vk) for (kn, _, _), qk, vk in zip(topo.kernel_slots, qb, vb)]
    return dofs_from_levels(topo, out, which="q")


def chart_rate(model: Model, xi: jax.Array, v: jax.Array) -> jax.Array:
    """``ξ̇`` of the chart ``q₀ ⊕ ξ`` at velocity ``v`` (see :func:`sodyn.joints.chart_rate`)."""
    topo = model.topology
    xb = dofs_to_levels(topo, xi, 0.0)
    vb = dofs_to_levels(topo, v, 0.0)
    out = [joints.chart_rate(kn, x, w) for (kn, _, _), x, w in zip(topo.kernel_slots, xb, vb)]
    return dofs_from_levels(topo, out)


def difference(model: Model, q0, q1) -> jax.Array:
    """The velocity ``v`` with ``integrate(model, q0, v) = q1`` (``q1 ⊖ q0``)."""
    q0 = check_vector(model, q0, model.nq, "q0")
    q1 = check_vector(model, q1, model.nq, "q1", q0.dtype)
    topo = model.topology
    b0 = dofs_to_levels(topo, q0, 1.0, which="q")
    b1 = dofs_to_levels(topo, q1, 1.0, which="q")
    out = [joints.difference(kn, a, b) for (kn, _, _), a, b in zip(topo.kernel_slots, b0, b1)]
    return dofs_from_levels(topo, out)


def normalize_configuration(model: Model, q) -> jax.Array:
    """Project ``q`` onto the manifold: renormalise every quaternion."""
    q = check_vector(model, q, model.nq, "q")
    return integrate(model, q, jnp.zeros(model.nv, q.dtype))
