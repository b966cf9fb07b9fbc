"""Forward dynamics for several right-hand sides on one articulated-body factorization.

The Riccati quantities ``P``, ``D⁻¹``, ``U`` and ``G`` of Jain Alg. 7.1 depend on the
configuration, the inertias, the armature and an added inertia ``B`` alone.  The velocity terms
``a``, the bias forces ``b``, the external and the joint forces enter only the innovations
(Alg. 7.2, ``z(k) = P(k) a(k) + b(k) + Σ_c φ(k, c) z⁺(c)``, ``ν = D⁻¹ (T − H z)``) and the
acceleration scatter (Lemma 7.6).  A computation that solves ``(𝓜 + Σ_k J_k* B_k J_k) θ̈ = …``
at one configuration for several ``(θ̇, τ, f_ext)`` (the implicit step's two solves and its
contacts' coupling passes, :mod:`sodyn.simulate.stepping`) sweeps the Riccati gather once
(:func:`factorize`); each :func:`solve` is then a velocity scatter, a gather of 6-vectors and the
acceleration scatter, in the ``"local"`` convention.

Derivatives come from the implicit function theorem, as for
:func:`~sodyn.algorithms.articulated.forward_dynamics`: the solve's tangent is
``𝓜⁻¹ (dτ − ∂ID/∂(q, θ̇, params, f_ext, B) · d(…))`` with ``𝓜⁻¹`` applied on the factorization
(Lemma 7.5), which is itself not differentiated (its tangent would only re-derive the same ``𝓜⁻¹``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from sodyn.algorithms.articulated import (
    FACTORS,
    ArticulatedBodies,
    accelerations,
    articulated_gather,
    implicit_tangent,
    innovations,
)
from sodyn.algorithms.common import gravity_acceleration, model_params, passive_joint_force, prepare
from sodyn.algorithms.conventions import Frames, body_frames, forward_terms
from sodyn.model import Model
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.topology import dofs_to_levels, to_levels


class Factorization(NamedTuple):
    """The body frames and the Riccati quantities (``U``, ``D⁻¹``, ``G`` per kernel and the
    articulated inertias ``P``, slot layout) of one configuration."""

    frames: Frames
    factors: ArticulatedBodies


def factorize(model: Model, q: jax.Array, added: jax.Array | None = None) -> Factorization:
    """The Riccati gather (Jain Alg. 7.1) at ``q``, with ``added`` ``B`` ``(n_bodies, 6, 6)`` (body
    frames, or ``None``) in every ``P``.  ``U``, ``D⁻¹``, ``G`` and each solve's ``θ̈`` are named
    :data:`~sodyn.algorithms.articulated.FACTORS`: all a rematerialised reverse pass reads."""
    frames = body_frames(model, prepare(model, q))
    if added is not None:
        added = to_levels(model.topology, added, jnp.zeros((6, 6), q.dtype))
    g = articulated_gather(model, frames, added=added, bodies=("P",), unroll=FORWARD_UNROLL)
    kernels = checkpoint_name(g.factors.kernels, FACTORS)  # what the derivative reads (not P)
    return Factorization(frames, ArticulatedBodies(kernels, g.bodies["P"]))


def solve(model: Model, q, v, tau, f_ext, added, factorization: Factorization) -> jax.Array:
    """``θ̈`` of :func:`~sodyn.algorithms.articulated.forward_dynamics` ``(model, q, v, tau, f_ext,
    added_inertia=added)`` on the ``factorization`` of ``(model, q, added)`` (unchecked inputs,
    ``"local"`` convention)."""
    return _solve(model, q, v, tau, f_ext, added, factorization)


def _accelerations(model: Model, q, v, tau, f_ext, fac: Factorization) -> jax.Array:
    dtype = q.dtype
    m = model_params(model, dtype)
    _, coriolis, bias = forward_terms(model, q, v, f_ext, "local", FORWARD_UNROLL)
    t_blocks = dofs_to_levels(model.topology, tau - passive_joint_force(m, v), 0.0)
    nus = innovations(model, fac.frames, fac.factors, t_blocks, FORWARD_UNROLL, coriolis=coriolis, bias=bias)
    return accelerations(model, fac.frames, fac.factors, nus, gravity_acceleration(m, dtype), coriolis,
                         FORWARD_UNROLL)


@jax.custom_jvp
def _solve(model: Model, q, v, tau, f_ext, added, fac: Factorization):
    return _accelerations(model, q, v, tau, f_ext, fac)


@_solve.defjvp
def _solve_jvp(primals, tangents):
    model, q, v, tau, f_ext, _, fac = primals
    qdd = checkpoint_name(_accelerations(model, q, v, tau, f_ext, fac), FACTORS)
    return qdd, implicit_tangent(primals, tangents, qdd, fac.frames, fac.factors)


__all__ = ["Factorization", "factorize", "solve"]
