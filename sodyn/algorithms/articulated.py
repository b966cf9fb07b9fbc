"""Articulated-body inertias in body frames: the Riccati quantities, ``𝓜⁻¹ x`` and ``log det 𝓜``.

Riccati recursion (Jain Alg. 6.1 / 7.1, tree form §9.4; one gather, tips to base):

    P(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) P⁺(c) φ*(k, c)
    D(k) = H(k) P(k) H*(k) + armature(k),   G(k) = P(k) H*(k) D⁻¹(k)
    τ̄(k) = I − G(k) H(k),                   P⁺(k) = τ̄(k) P(k)
    ψ(℘(k), k) = φ(℘(k), k) τ̄(k),           K(℘(k), k) = φ(℘(k), k) G(k)

Innovations (Alg. 7.2, gather) and accelerations (scatter):

    z(k) = P(k) a(k) + b(k) − f_ext(k) + Σ_c φ(k, c) z⁺(c)
    ε(k) = T(k) − H(k) z(k),   ν(k) = D⁻¹(k) ε(k),   z⁺(k) = z(k) + G(k) ε(k)
    α⁺(k) = φ*(℘(k), k) α(℘(k)),   θ̈(k) = ν(k) − G*(k) α⁺(k),   α(k) = α⁺(k) + H*(k) θ̈(k) + a(k)

With ``a = b = 0`` and ``T = x`` these compute ``𝓜⁻¹ x = [I − HψK]* D⁻¹ [I − HψK] x``
(Lemma 7.5), :func:`inverse_mass_matrix_times` in O(N) without forming or factoring 𝓜, and
``log det 𝓜 = Σ_k log det D(k)`` (Lemma 7.3).  The operational-space recursions build on
these body-frame quantities.  Forward dynamics and the full ``𝓜⁻¹`` run the same recursions
in world axes (:mod:`sodyn.algorithms.world_articulated`), where the ``φ`` vanish.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import (
    Levels,
    check_vector,
    gravity_acceleration,
    hinge_vectors_by_level,
    model_params,
    prepare,
)
from sodyn.algorithms.kinematics import velocities_and_accelerations_levels
from sodyn.model import Model
from sodyn.topology import (
    AncestorSubtree,
    dofs_from_levels,
    dofs_to_levels,
    from_levels,
    gather,
    restrict_kernel,
    restrict_slots,
    scatter,
    split_slots,
    to_levels,
)
from sodyn.unit_columns import gather_unit_columns, sum_of_column_products


class ArticulatedLevels(NamedTuple):
    """Riccati quantities in the slot layout (internal; see :class:`ArticulatedBodyInertias`)."""

    P: jax.Array                  # (1, W, 6, 6)
    P_plus: jax.Array             # (1, W, 6, 6)
    U: tuple[jax.Array, ...]      # per kernel (1, Wk, 6, nv_k) = P H*
    D: tuple[jax.Array, ...]      # per kernel (1, Wk, nv_k, nv_k)
    D_inv: tuple[jax.Array, ...]  # per kernel (1, Wk, nv_k, nv_k)


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


def _riccati_level(subspaces, slices, big_p, h_l, arm_l):
    """One level of the Riccati recursion: ``P⁺`` and, per kernel, ``U = P H*``, ``D``, ``D⁻¹``."""
    p_plus, per_kernel = [], []
    for s, sl, h, arm, pk in zip(subspaces, slices, h_l, arm_l, split_slots(big_p, slices)):
        sub = s.at_level(h, sl)
        u = sub.right_times(pk)  # (Wk, 6, nv_k)
        d = sub.transpose_times_cols(u)  # H P H*, (Wk, nv_k, nv_k)
        d = d + arm[..., None] * jnp.eye(d.shape[-1], dtype=d.dtype)
        dinv = spatial.spd_inverse(d)
        pp = pk - spatial.mm(spatial.mm(u, dinv), spatial.transpose(u))
        p_plus.append(0.5 * (pp + spatial.transpose(pp)))
        per_kernel.append((u, d, dinv))
    return jnp.concatenate(p_plus, axis=0), per_kernel


def _innovation_level(subspaces, slices, z, h_l, t_l, u_l, dinv_l):
    """One level of the innovations recursion: ``ν = D⁻¹(T − H z)`` and ``z⁺ = z + U ν``."""
    z_plus, nus = [], []
    for s, sl, h, t, u, dinv, zk in zip(subspaces, slices, h_l, t_l, u_l, dinv_l, split_slots(z, slices)):
        nu = spatial.mv(dinv, t - s.at_level(h, sl).transpose_times(zk))
        z_plus.append(zk + spatial.mv(u, nu))
        nus.append(nu)
    return jnp.concatenate(z_plus, axis=0), nus


def _unzip(per_kernel, n: int) -> tuple[tuple[jax.Array, ...], ...]:
    """Per-kernel tuples of ``n`` outputs → ``n`` tuples over kernels."""
    return tuple(tuple(o[i] for o in per_kernel) for i in range(n))


def articulated_levels(model: Model, levels: Levels) -> ArticulatedLevels:
    """The Riccati recursion (Jain Alg. 7.1) as one gather."""
    topo = model.topology
    dtype = levels.rel_p.dtype
    arm_blocks = dofs_to_levels(topo, model_params(model, dtype).armature, 0.0)

    def step(from_children, x, xk, slices):
        r, p, inertia = x
        big_p = inertia + from_children
        p_plus, per_kernel = _riccati_level(levels.subspaces, slices, big_p, *zip(*xk))
        return spatial.inertia_to_parent(r, p, p_plus), ((big_p, p_plus), per_kernel)

    hs = hinge_vectors_by_level(levels)
    (big_p, p_plus), per_kernel = gather(
        topo, step, jnp.zeros((6, 6), dtype), (levels.rel_r, levels.rel_p, levels.inertia),
        tuple(zip(hs, arm_blocks)),
    )
    us, ds, dinvs = _unzip(per_kernel, 3)
    return ArticulatedLevels(big_p, p_plus, us, ds, dinvs)


def restrict_articulated(subtree: AncestorSubtree, abi: ArticulatedLevels) -> ArticulatedLevels:
    """The Riccati quantities of the bodies of ``subtree``, in its slot layout (``None`` stays
    ``None``).  They are those of the whole tree (each depends on the body's descendants),
    only read on fewer bodies."""
    if subtree.is_whole_tree:
        return abi

    def slots(x):
        return None if x is None else restrict_slots(subtree, x)

    def kernels(xs):
        if xs is None:
            return None
        return tuple(restrict_kernel(subtree, k, xs[f]) for k, f in enumerate(subtree.full_kernel))

    return ArticulatedLevels(slots(abi.P), slots(abi.P_plus), kernels(abi.U), kernels(abi.D), kernels(abi.D_inv))


def _accelerations(model, levels, coriolis, nus, us, dinvs, root_acceleration) -> jax.Array:
    """The acceleration scatter of Lemma 7.6: ``θ̈ = ν − D⁻¹ U* α⁺``, ``α = α⁺ + H* θ̈ + a``."""
    topo = model.topology
    hs = hinge_vectors_by_level(levels)

    def down(parent_acc, x, xk, slices):
        r, p, cor = x
        a_plus = spatial.motion_to_child(r, p, parent_acc)
        qdd, motion = [], []
        for s, sl, (h, nu, u, dinv), ak in zip(levels.subspaces, slices, xk, split_slots(a_plus, slices)):
            qk = nu - spatial.mv(dinv, spatial.mtv(u, ak))
            qdd.append(qk)
            motion.append(s.at_level(h, sl).times(qk))
        acc = a_plus + jnp.concatenate(motion, axis=0) + cor
        return acc, ((), tuple(qdd))

    _, qdd = scatter(
        topo, down, root_acceleration, (levels.rel_r, levels.rel_p, coriolis), tuple(zip(hs, nus, us, dinvs))
    )
    return dofs_from_levels(topo, list(qdd))


def innovations_and_accelerations(
    model: Model,
    levels: Levels,
    abi: ArticulatedLevels,
    z_local: jax.Array,
    coriolis: jax.Array,
    t_blocks: list[jax.Array],
    root_acceleration: jax.Array,
) -> jax.Array:
    """The innovations gather and the acceleration scatter (Jain Alg. 7.2, Lemma 7.6), given
    the Riccati quantities.

    ``z_local = P a + b − f_ext`` per body, ``coriolis = a`` per body, ``t_blocks`` the joint
    forces per kernel.  Returns ``θ̈`` as an ``(nv,)`` vector.
    """
    nus = _innovations(model, levels, abi, z_local, t_blocks)
    return _accelerations(model, levels, coriolis, nus, abi.U, abi.D_inv, root_acceleration)


def _innovations(model: Model, levels: Levels, abi: ArticulatedLevels, z_local: jax.Array, t_blocks) -> tuple:
    """The innovations gather (Jain Alg. 7.2): ``ν = D⁻¹ ε`` per kernel, ``ε = T − H z``."""
    hs = hinge_vectors_by_level(levels)

    def up(from_children, x, xk, slices):
        r, p, zl = x
        z_plus, nus = _innovation_level(levels.subspaces, slices, zl + from_children, *zip(*xk))
        return spatial.force_to_parent(r, p, z_plus), ((), tuple(nus))

    _, nus = gather(
        model.topology, up, jnp.zeros(6, z_local.dtype), (levels.rel_r, levels.rel_p, z_local),
        tuple(zip(hs, t_blocks, abi.U, abi.D_inv)),
    )
    return nus


def body_frame_forward(model: Model, q, v, tau, f_ext) -> tuple[jax.Array, Callable[[jax.Array], jax.Array]]:
    """The fused ABA in body frames (Jain Lemma 7.6): ``θ̈`` and ``x ↦ 𝓜⁻¹ x`` on its Riccati
    quantities (Lemma 7.5).  Forward dynamics takes this path below float64
    (:mod:`sodyn.algorithms.world_articulated` explains why)."""
    dtype = q.dtype
    topo = model.topology
    m = model_params(model, dtype)
    levels = prepare(model, q)
    vel, _, coriolis = velocities_and_accelerations_levels(
        levels, topo, dofs_to_levels(topo, v, 0.0), None, jnp.zeros(6, dtype)
    )
    bias = spatial.force_cross(vel, spatial.mv(levels.inertia, vel))
    if f_ext is not None:
        bias = bias - to_levels(topo, f_ext, jnp.zeros(6, dtype))
    t_blocks = dofs_to_levels(topo, tau - m.damping * v, 0.0)
    arm_blocks = dofs_to_levels(topo, m.armature, 0.0)
    hs = hinge_vectors_by_level(levels)

    def up(from_children, x, xk, slices):
        r, p, inertia, cor, b = x
        h_l, arm_l, t_l = zip(*xk)
        pa_children, za_children = from_children
        big_p = inertia + pa_children
        p_plus, per_kernel = _riccati_level(levels.subspaces, slices, big_p, h_l, arm_l)
        us = [o[0] for o in per_kernel]
        dinvs = [o[2] for o in per_kernel]
        z = spatial.mv(big_p, cor) + b + za_children
        z_plus, nus = _innovation_level(levels.subspaces, slices, z, h_l, t_l, us, dinvs)
        sent = (spatial.inertia_to_parent(r, p, p_plus), spatial.force_to_parent(r, p, z_plus))
        return sent, ((), tuple(zip(nus, us, dinvs)))

    zero = (jnp.zeros((6, 6), dtype), jnp.zeros(6, dtype))
    _, per_kernel = gather(
        topo, up, zero, (levels.rel_r, levels.rel_p, levels.inertia, coriolis, bias),
        tuple(zip(hs, arm_blocks, t_blocks)),
    )
    nus, us, dinvs = _unzip(per_kernel, 3)
    qdd = _accelerations(model, levels, coriolis, nus, us, dinvs, gravity_acceleration(m, dtype))
    abi = ArticulatedLevels(None, None, us, None, dinvs)
    return qdd, lambda x: _inverse_times_levels(model, levels, abi, x)


def _inverse_times_levels(model: Model, levels: Levels, abi: ArticulatedLevels, x: jax.Array) -> jax.Array:
    topo = model.topology
    dtype = x.dtype
    zero = jnp.zeros(topo.layout_shape + (6,), dtype)
    return innovations_and_accelerations(
        model, levels, abi, zero, zero, dofs_to_levels(topo, x, 0.0), jnp.zeros(6, dtype)
    )


def inverse_mass_matrix_times(model: Model, q, x) -> jax.Array:
    """``𝓜⁻¹ x`` in O(N) by the innovations factorization (Jain Lemma 7.5), without 𝓜."""
    q = check_vector(model, q, model.nq, "q")
    x = check_vector(model, x, model.nv, "x", q.dtype)
    levels = prepare(model, q)
    abi = articulated_levels(model, levels)
    return _inverse_times_levels(model, levels, abi, x)


def body_frame_inverse_mass_matrix(model: Model, q: jax.Array) -> jax.Array:
    """``𝓜⁻¹ = N* D N`` in body frames, ``N = D⁻¹ [I − HψK]`` the innovations of the unit
    vectors (Lemma 7.5), swept together with columns shared between subtrees
    (:mod:`sodyn.unit_columns`).  The inverse mass matrix takes this path below float64
    (:mod:`sodyn.algorithms.world_articulated` explains why)."""
    topo = model.topology
    levels = prepare(model, q)
    abi = articulated_levels(model, levels)

    def step(z, x, xk, slices):
        r, p = x
        z_plus, outs = [], []
        for s, sl, zk, ((h, u, d, dinv), unit) in zip(levels.subspaces, slices, split_slots(z, slices), xk):
            sub = s.at_level(h, sl)
            if sub.h is not None:
                sub = sub._replace(h=sub.h[:, None])  # the slot's axis, broadcast over columns
            nu = spatial.mv(dinv[:, None], unit - sub.transpose_times(zk))  # (Wk, C, nv_k)
            z_plus.append(zk + spatial.mv(u[:, None], nu))
            outs.append((nu, spatial.mv(d[:, None], nu)))
        return spatial.force_to_parent(r[:, None], p[:, None], jnp.concatenate(z_plus, axis=0)), tuple(outs)

    kernel_xs = tuple(zip(hinge_vectors_by_level(levels), abi.U, abi.D, abi.D_inv))
    per_segment = gather_unit_columns(topo, step, 6, (levels.rel_r, levels.rel_p), kernel_xs, q.dtype)
    minv = sum_of_column_products(
        topo, [[o[0] for o in seg] for seg in per_segment], [[o[1] for o in seg] for seg in per_segment]
    )
    return 0.5 * (minv + minv.T)


def log_det_mass_matrix(model: Model, q) -> jax.Array:
    """``log det 𝓜 = Σ_k log det D(k)`` (Jain Lemma 7.3), O(N)."""
    q = check_vector(model, q, model.nq, "q")
    levels = prepare(model, q)
    abi = articulated_levels(model, levels)
    mask = jnp.asarray(model.topology.mask)
    total = jnp.zeros((), q.dtype)
    for s, d in zip(levels.subspaces, abi.D):
        real = mask[:, s.start:s.stop, None, None]
        d = jnp.where(real, d, jnp.eye(d.shape[-1], dtype=d.dtype))  # padding: log det I = 0
        if d.shape[-1] == 1:
            ld = jnp.log(d[..., 0, 0])
        else:
            chol = jnp.linalg.cholesky(0.5 * (d + spatial.transpose(d)))
            ld = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        total = total + jnp.sum(ld)
    return total


def articulated_body_inertias(model: Model, q) -> ArticulatedBodyInertias:
    """The Riccati quantities ``P, P⁺, D, G, τ̄, ψ, K`` at ``q`` (Jain Alg. 7.1)."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    abi = articulated_levels(model, levels)
    nv = topo.nv
    # G = U D⁻¹ per kernel; rows per dof.
    g_blocks = [jnp.swapaxes(spatial.mm(u, dinv), -1, -2) for u, dinv in zip(abi.U, abi.D_inv)]
    g = dofs_from_levels(topo, g_blocks)  # (nv, 6)
    d = jnp.zeros((nv, nv), dtype)
    for db, vi in zip(abi.D, topo.v_index):
        real = vi[..., 0] < nv
        idx = vi[real]  # (n_k, nv_k)
        blocks = db[real]
        d = d.at[idx[:, :, None], idx[:, None, :]].set(blocks)
    h_blocks = [jnp.swapaxes(jnp.broadcast_to(s.matrix(), u.shape), -1, -2) for s, u in zip(levels.subspaces, abi.U)]
    h_rows = dofs_from_levels(topo, h_blocks)  # (nv, 6)
    gh = jnp.zeros((topo.n_bodies, 6, 6), dtype).at[topo.dof_body].add(g[:, :, None] * h_rows[:, None, :])
    tau_bar = jnp.eye(6, dtype=dtype) - gh
    rel_r, rel_p = from_levels(topo, levels.rel_r), from_levels(topo, levels.rel_p)
    phi = spatial.transpose(spatial.motion_transform_matrix(rel_r, rel_p))
    psi = spatial.mm(phi, tau_bar)
    k = spatial.mv(phi[topo.dof_body], g)
    return ArticulatedBodyInertias(
        from_levels(topo, abi.P), from_levels(topo, abi.P_plus), d, g, tau_bar, psi, k
    )
