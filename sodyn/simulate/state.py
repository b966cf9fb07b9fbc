"""The simulation :class:`State`: configuration, velocity and time, in the model's dtype."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.algorithms.common import check_vector
from sodyn.model import Model


def state_array(x, dtype, name: str) -> jax.Array:
    """``x`` cast to the model's ``dtype`` under sodyn's one dtype policy (the model's dtype wins).

    Integers and booleans are cast (a ``q`` of zeros written as ints is a configuration);
    float16/bfloat16 are rejected (a 10-bit mantissa cannot hold a configuration to the
    precision a step changes it by, and a float16 state would otherwise pull the whole step
    into float16); complex numbers and non-numeric values (strings, objects) are rejected."""
    if not isinstance(x, jax.Array):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from err
    kind = np.dtype(x.dtype)
    if jnp.issubdtype(kind, jnp.complexfloating):
        raise ValueError(f"{name} must be real, got dtype {kind.name}")
    if kind.name in ("float16", "bfloat16"):
        raise ValueError(f"{name} has dtype {kind.name}, too coarse for simulation: use float32 or float64 "
                         f"(the model's dtype is {np.dtype(dtype).name}; Model.astype changes it)")
    if not (jnp.issubdtype(kind, jnp.floating) or jnp.issubdtype(kind, jnp.integer) or kind == np.bool_):
        raise ValueError(f"{name} must be a numeric array, got dtype {kind}")
    return jnp.asarray(x).astype(dtype)


class State(eqx.Module):
    """A point of a trajectory: ``q (nq,)`` on the joint manifold, ``v (nv,)``, time ``t ()``
    and the actuators' activations ``act (n_act,)`` (:attr:`sodyn.Actuators.n_act`: the
    actuators with activation dynamics, in order; empty without them).

    The compliant contact model is memoryless, so this is all a step needs.  Batched states
    (Monte Carlo, trajectories) are ``State`` values whose leaves carry leading axes.

    Time: :func:`~sodyn.simulate.step` adds ``dt`` to ``t``; a rollout writes the ``t`` of its
    ``k``-th state as ``t0 + k·dt`` (the product rounded once, see
    :func:`~sodyn.simulate.rollout.step_times`), so ``10⁵`` float32 steps of 1 ms end at
    ``t = 100.0`` exactly instead of accumulating ``10⁵`` roundings.
    """

    q: jax.Array
    v: jax.Array
    t: jax.Array
    act: jax.Array = eqx.field(default_factory=lambda: jnp.zeros(0))

    @classmethod
    def initial(cls, model: Model, q=None, v=None, t=0.0, act=None, *, actuators=None) -> State:
        """A state at ``(q, v, t, act)``; ``q`` defaults to the neutral configuration, ``v`` and
        the activations ``act`` to zero (an empty ``act`` is the zero activation).  The number of
        activations is that of ``actuators`` (default: the model's).

        ``q``, ``v`` and ``t`` take the model's dtype (``model.mass.dtype``; change it with
        :meth:`~sodyn.Model.astype`): integers are cast, float16/bfloat16 and complex values
        and non-numbers are rejected with a ``ValueError`` naming the argument
        (:func:`state_array`); shapes are checked against ``model``.
        """
        dtype = model.mass.dtype
        q = model.q_neutral.astype(dtype) if q is None else check_vector(model, state_array(q, dtype, "q"),
                                                                         model.nq, "q")
        v = jnp.zeros(model.nv, dtype) if v is None else check_vector(model, state_array(v, dtype, "v"),
                                                                      model.nv, "v")
        t = state_array(t, dtype, "t")
        if t.ndim != 0:
            raise ValueError(f"t must be a scalar time, got shape {t.shape} (for a batch, use jax.vmap)")
        n_act = (model.actuators if actuators is None else actuators).n_act
        act = jnp.zeros(n_act, dtype) if act is None else state_array(act, dtype, "act")
        if act.shape == (0,) and n_act:
            act = jnp.zeros(n_act, dtype)
        if act.shape != (n_act,):
            raise ValueError(f"act must have shape ({n_act},) (one activation per actuator with dynamics), "
                             f"got {act.shape}")
        return cls(q, v, t, act)
