"""``𝓜⁻¹`` and what the articulated-body factorization gives besides forward dynamics (Jain
Ch. 7): ``𝓜⁻¹ x`` and ``𝓜⁻¹`` from the innovations factorization ``𝓜⁻¹ = [I − HψK]* D⁻¹
[I − HψK]`` (Lemma 7.5, eq. 7.20), ``log det 𝓜 = Σ_k log det D(k)`` (Lemma 7.3), and the
Riccati quantities ``P, P⁺, D, G, τ̄, ψ, K`` of Alg. 7.1 in body/dof order.  The sweeps are
those of :mod:`sodyn.algorithms.articulated`.

The gradient of ``log det 𝓜`` (the Fixman term) comes in closed form from ``P`` and the
compliance kernel ``Υ`` of the Ω recursions (:mod:`sodyn.algorithms.operational_space_sweeps`,
Jain eq. 10.16; SLD §2.7): per dof with motion axis ``h``,
``∂ log det 𝓜 / ∂θ = 2 tr(P(k) Υ(k) crf(h))`` (:func:`log_det_mass_matrix_gradient`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.articulated import accelerations, articulated_gather, innovation_kernel, riccati
from sodyn.algorithms.common import check_vector, prepare
from sodyn.algorithms.conventions import (
    CONVENTIONS,
    Convention,
    body_frames,
    check_convention,
    expand_slots,
    frames_for,
    pose_force_to_parent,
)
from sodyn.algorithms.operational_space_sweeps import compliance_kernel
from sodyn.model import Model
from sodyn.sweeps import Fields, gather
from sodyn.topology import Topology, dofs_from_levels, dofs_to_levels, from_levels
from sodyn.unit_columns import sum_of_column_products


def inverse_mass_matrix_times(model: Model, q, x, *, convention: Convention = "local") -> jax.Array:
    """``𝓜⁻¹ x`` in O(N) by the innovations factorization (Jain Lemma 7.5), without 𝓜."""
    q = check_vector(model, q, model.nq, "q")
    x = check_vector(model, x, model.nv, "x", q.dtype)
    frames = frames_for(model, prepare(model, q), convention)
    g = articulated_gather(model, frames, dofs_to_levels(model.topology, x, 0.0))
    return accelerations(model, frames, g.factors, g.nu, jnp.zeros(6, x.dtype))


def inverse_mass_matrix(model: Model, q, *, convention: Convention = "local") -> jax.Array:
    """``𝓜⁻¹`` ``(nv, nv)`` from ``[I − HψK]* D⁻¹ [I − HψK]`` (Jain eq. 7.20), 𝓜 never formed.

    With ``N = D⁻¹ [I − HψK]`` (the innovations ``ν`` of the unit vectors, Lemma 7.5),
    ``𝓜⁻¹ = N* D N = Σ_c ν_c(e_a) · D ν_c(e_b)``.  The unit vectors are swept together, each
    segment of levels carrying only the columns its subtrees can see, and the sum over ``c``
    is formed per subtree (:mod:`sodyn.unit_columns`).
    """
    check_convention(convention)
    return _INVERSE_MASS_MATRIX[convention](model, check_vector(model, q, model.nq, "q"))


def _inverse_mass_matrix(model: Model, q, convention: str) -> jax.Array:
    frames = frames_for(model, prepare(model, q), convention)
    ab = riccati(model, frames)

    def kernel_step(kernel, z):
        ric = kernel.x.factors
        z_plus, nu = innovation_kernel(z, kernel.x.axes, ric, kernel.unit)
        return z_plus, (nu, spatial.mv(expand_slots(ric.D, 1), nu))

    def step(z, level):
        z_plus, outs = level.each_kernel(kernel_step, z)
        return pose_force_to_parent(level.x.pose, z_plus), outs

    per_segment = gather(model.topology, step, jnp.zeros(6, q.dtype), Fields(pose=frames.pose),
                         Fields(axes=frames.axes, factors=ab.kernels), unit_columns=True)
    minv = sum_of_column_products(
        model.topology, [[o[0] for o in seg] for seg in per_segment], [[o[1] for o in seg] for seg in per_segment]
    )
    return 0.5 * (minv + minv.T)


_INVERSE_MASS_MATRIX = {c: functools.partial(_inverse_mass_matrix, convention=c) for c in CONVENTIONS}


def log_det_mass_matrix(model: Model, q) -> jax.Array:
    """``log det 𝓜 = Σ_k log det D(k)`` (Jain Lemma 7.3), O(N)."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    ab = riccati(model, body_frames(model, prepare(model, q)))
    mask = jnp.asarray(topo.mask)
    total = jnp.zeros((), q.dtype)
    for (_, s0, s1), ric in zip(topo.kernel_slots, ab.kernels):
        d = jnp.where(mask[:, s0:s1, None, None], ric.D, jnp.eye(ric.D.shape[-1], dtype=q.dtype))  # padding: 0
        if d.shape[-1] == 1:
            ld = jnp.log(d[..., 0, 0])
        else:
            chol = jnp.linalg.cholesky(0.5 * (d + spatial.transpose(d)))
            ld = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        total = total + jnp.sum(ld)
    return total


class ArticulatedBodyInertias(NamedTuple):
    """The articulated-body quantities of Jain Ch. 6–7, in body/dof order.

    ``P``, ``P_plus`` and ``tau_bar`` are ``(n_bodies, 6, 6)`` about each body frame; ``psi``
    is ``ψ(℘(k), k) = φ(℘(k), k) τ̄(k)`` about the parent's frame.  ``D`` is the
    block-diagonal ``(nv, nv)`` matrix of the ``D(k)``.  ``G`` is ``(nv, 6)``: row ``j`` is the
    column of ``G(k)`` for dof ``j`` of body ``k``; ``K`` likewise holds ``φ(℘(k), k) G(k)``.
    """

    P: jax.Array
    P_plus: jax.Array
    D: jax.Array
    G: jax.Array
    tau_bar: jax.Array
    psi: jax.Array
    K: jax.Array


def articulated_body_inertias(model: Model, q) -> ArticulatedBodyInertias:
    """The Riccati quantities ``P, P⁺, D, G, τ̄, ψ, K`` at ``q`` in body frames (Jain Alg. 7.1)."""
    q = check_vector(model, q, model.nq, "q")
    topo: Topology = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    ab = riccati(model, body_frames(model, levels), with_inertias=True)
    nv = topo.nv
    g = dofs_from_levels(topo, [ric.G for ric in ab.kernels])  # (nv, 6): rows of G*
    d = jnp.zeros((nv, nv), dtype)
    for ric, vi in zip(ab.kernels, topo.v_index):
        real = vi[..., 0] < nv
        idx = vi[real]  # (n_k, nv_k)
        d = d.at[idx[:, :, None], idx[:, None, :]].set(ric.D[real])
    h_rows = dofs_from_levels(topo, [a.row_matrix(ric.G.shape[:-2], dtype) for a, ric in zip(levels.axes, ab.kernels)])
    gh = jnp.zeros((topo.n_bodies, 6, 6), dtype).at[topo.dof_body].add(g[:, :, None] * h_rows[:, None, :])
    tau_bar = jnp.eye(6, dtype=dtype) - gh
    rel_r, rel_p = from_levels(topo, levels.rel_r), from_levels(topo, levels.rel_p)
    phi = spatial.transpose(spatial.motion_transform_matrix(rel_r, rel_p))
    psi = spatial.mm(phi, tau_bar)
    k = spatial.mv(phi[topo.dof_body], g)
    return ArticulatedBodyInertias(from_levels(topo, ab.P), from_levels(topo, ab.P_plus), d, g, tau_bar, psi, k)


# ---------------------------------------------------------------------------
# gradient of log det 𝓜 (the Fixman term)
# ---------------------------------------------------------------------------


def _motion_cross_matrix(h: jax.Array) -> jax.Array:
    """``crm(h)``: the 6×6 matrix of ``x ↦ h ×ₘ x`` for motion vectors ``h = [w; u]``."""
    w, u = spatial.skew(h[..., :3]), spatial.skew(h[..., 3:])
    z = jnp.zeros_like(w)
    return jnp.concatenate(
        [jnp.concatenate([w, z], -1), jnp.concatenate([u, w], -1)], -2
    )


def log_det_mass_matrix_gradient(model: Model, q) -> jax.Array:
    """``∂ log det 𝓜 / ∂θ`` ``(nv,)`` in closed form from ``P`` and ``Υ`` (SLD §2.7), O(n).

    For a dof of body ``k`` whose motion axis (column of ``H*(k)``, body frame) is
    ``h = [h_ω; h_v]``,

        ∂ log det 𝓜 / ∂θ = 2 tr( P(k) Υ(k) crf(h) ),   crf(h) = [[h̃_ω, h̃_v], [0, h̃_ω]],

    the spatial *force* cross-product matrix of ``h`` (``crf(h) = −crm(h)*``).  For a revolute
    joint about the body origin ``crf(h) = blockdiag(h̃_ω, h̃_ω)``: SLD's slide formula, which
    holds in any frame at 𝕆_k.  Derivation: ``∂φ*(℘(k),k)/∂θ = −crm(h) φ*(℘(k),k)`` in body
    coordinates, so ``∂ log det 𝓜 = 2 tr(∂E_φ · φ M φ* Ω)``; ``P Υ`` transforms by a similarity
    under a change of frame and so does ``crf(h)``, which makes the trace frame-independent and
    covers prismatic and helical joints and the translational dofs of planar and free joints
    too (no separate term as in Jain eq. 18.68 is needed in this form; checked against
    automatic differentiation on random trees with every joint type).

    The derivative is along the joint's *velocity* coordinates (``q ⊕ ε e_j`` as in
    :func:`sodyn.integrate`): for one-dof joints that is exactly
    ``jax.grad(log_det_mass_matrix)(q)``; for spherical, planar and free joints it is the
    tangent-space derivative (not the derivative with respect to quaternion entries).
    Costs one Riccati gather and one Υ scatter.  The Fixman corrective force is
    ``−(k_B T / 2)`` times this gradient.
    """
    q = check_vector(model, q, model.nq, "q")
    return _log_det_gradient_closed_form(model, q)


def _log_det_gradient_closed_form(model: Model, q: jax.Array) -> jax.Array:
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    abi = riccati(model, body_frames(model, levels), with_inertias=True)
    upsilon, _ = compliance_kernel(topo, levels, abi)
    py = spatial.mm(abi.P, upsilon)  # (1, W, 6, 6)
    blocks = []
    for axes, (_, s0, s1) in zip(levels.axes, topo.kernel_slots):
        cols = axes.row_matrix((1, s1 - s0), dtype)  # (1, Wk, nv_k, 6)
        crm = _motion_cross_matrix(cols)  # (1, Wk, nv_k, 6, 6)
        # tr(PΥ crf(h)) with crf(h) = −crm(h)*: tr(A crf) = −Σ A ∘ crm
        g = -2.0 * jnp.sum(py[:, s0:s1, None] * crm, axis=(-1, -2))
        blocks.append(g)
    return dofs_from_levels(topo, blocks)


__all__ = [
    "ArticulatedBodyInertias",
    "articulated_body_inertias",
    "inverse_mass_matrix",
    "inverse_mass_matrix_times",
    "log_det_mass_matrix",
    "log_det_mass_matrix_gradient",
]
