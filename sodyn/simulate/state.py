"""The simulation :class:`State`: configuration, velocity and time."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from sodyn.algorithms.common import check_vector
from sodyn.model import Model


class State(eqx.Module):
    """A point of a trajectory: ``q (nq,)`` on the joint manifold, ``v (nv,)`` and time ``t ()``.

    The compliant contact model is memoryless, so this is all a step needs.  Batched states
    (Monte Carlo, trajectories) are ``State`` values whose leaves carry leading axes.
    """

    q: jax.Array
    v: jax.Array
    t: jax.Array

    @classmethod
    def initial(cls, model: Model, q=None, v=None, t=0.0) -> State:
        """A state at ``(q, v, t)``; ``q`` defaults to the neutral configuration, ``v`` to zero.

        ``q`` and ``v`` are checked against ``model`` (shape and dtype; the model's dtype by
        default).
        """
        dtype = model.mass.dtype
        q = model.q_neutral.astype(dtype) if q is None else check_vector(model, q, model.nq, "q")
        v = jnp.zeros(model.nv, q.dtype) if v is None else check_vector(model, v, model.nv, "v", q.dtype)
        return cls(q, v, jnp.asarray(t, q.dtype))
