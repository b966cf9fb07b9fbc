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
    """The neutral configuration: zero angles and positions, identity quaternions."""
    q = np.zeros(model.nq)
    for k, t in enumerate(model.joint_types):
        s = int(model.topology.q_start[k])
        kn = joints.KERNEL_OF[t]
        q[s: s + joints.NQ[kn]] = joints.neutral(kn)
    return jnp.asarray(q, dtype=model.mass.dtype)


def random_configuration(model: Model, key: jax.Array, scale: float = 1.0) -> jax.Array:
    """A random configuration.

    Hinges draw uniformly between their limits where finite, else in ``[−scale π, scale π]``
    (prismatic/helical: ``[−scale, scale]``); quaternions are uniform on SO(3); free-joint
    and planar positions draw in ``[−scale, scale]``.
    """
    dtype = model.mass.dtype
    parts = []
    keys = jax.random.split(key, model.n_bodies)
    lo = np.asarray(model.lower_limit)
    hi = np.asarray(model.upper_limit)
    for k, t in enumerate(model.joint_types):
        kn = joints.KERNEL_OF[t]
        s = int(model.topology.q_start[k])
        if kn == "hinge":
            span = scale * (np.pi if t in ("revolute", "continuous") else 1.0)
            low = lo[s] if np.isfinite(lo[s]) else -span
            high = hi[s] if np.isfinite(hi[s]) else span
            parts.append(joints.random(kn, keys[k], low, high, dtype))
        else:
            qk = joints.random(kn, keys[k], -1.0, 1.0, dtype)
            if kn in ("free", "planar"):
                qk = qk.at[:3 if kn == "free" else 2].multiply(scale)
            parts.append(qk)
    return jnp.concatenate(parts)


def integrate(model: Model, q, v, dt=1.0) -> jax.Array:
    """``q ⊕ v dt`` on the joint manifold (see :func:`sodyn.joints.integrate`)."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    topo = model.topology
    qb = dofs_to_levels(topo, q, 1.0, which="q")
    vb = dofs_to_levels(topo, v * dt, 0.0)
    out = [joints.integrate(kn, qk, vk) for (kn, _, _), qk, vk in zip(topo.kernel_slots, qb, vb)]
    return dofs_from_levels(topo, out, which="q")


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
