"""Forward dynamics and the inverse of the mass matrix by the articulated-body recursions in
world axes.

About one point fixed in space (:func:`~sodyn.algorithms.kinematics.centred_world_poses_levels`)
every rigid-body transformation ``φ(℘(k), k)`` of Jain's recursions is the identity: the
tip-to-base gathers add what the children send and the base-to-tip scatters pass the parent's
value on, with no 6 × 6 congruence or spatial transform per level.  The joint axes ``H*_w``,
the body inertias ``M_w`` (Jain eqs. 2.6–2.8), velocities and bias terms are formed once for
all bodies outside the Riccati and acceleration sweeps (velocities inside the poses' sweep for
wide trees, :func:`~sodyn.algorithms.kinematics.world_kinematics_levels`).  The inertias enter
the forward-dynamics gather as their ten parameters (13 numbers,
:func:`~sodyn.algorithms.mass_matrix.world_inertia_parameters`) and become 6 × 6 there, which
streams fewer numbers through the sweep than the matrices.  With ``V_w(k) = Σ_{j ≼ k} H*_w(j) θ̇(j)``:

    a(k) = V_w(k) ×ₘ H*_w(k) θ̇(k),     b(k) = V_w(k) ×_f M_w(k) V_w(k)          (eq. 5.14)
    P(k) = M_w(k) + Σ_c P⁺(c),         z(k) = P(k) a(k) + b(k) − f_ext(k) + Σ_c z⁺(c)
    D = H P H* + armature,  U = P H*,  ε = T − H z,  ν = D⁻¹ ε,
    P⁺ = P − U D⁻¹ U*,  z⁺ = z + U ν                                              (Alg. 7.1, 7.2)
    θ̈(k) = ν(k) − D⁻¹ U* α(℘(k)),      α(k) = α(℘(k)) + H*_w(k) θ̈(k) + a(k)      (Lemma 7.6)

``D``, ``ν`` and ``θ̈`` are joint-space quantities, the same in every frame (Pinocchio's
``aba`` offers the same choice as ``Convention.WORLD``).

Precision decides where this applies (:func:`in_world_axes`).  About one point, a light body
far from it carries inertia terms of order ``m |r|²`` that cancel in its ``D``: in float32, a
humanoid's gripper links of a few tens of grams about 1 m from the base lose two to three digits
of ``𝓜⁻¹`` against the body-frame recursions.  In float64 the loss does not show, so float64
runs here and narrower floats keep the body-frame recursions
(:func:`~sodyn.algorithms.articulated.body_frame_forward`,
:func:`~sodyn.algorithms.articulated.body_frame_inverse_mass_matrix`).  The point is the first
body's origin, so a floating base far from the world origin costs nothing either.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.articulated import body_frame_forward, body_frame_inverse_mass_matrix
from sodyn.algorithms.common import check_state, check_vector, gravity_acceleration, model_params, prepare
from sodyn.algorithms.inverse_dynamics import inverse_dynamics
from sodyn.algorithms.kinematics import centred_world_poses_levels, world_kinematics_levels, world_subspace_blocks
from sodyn.algorithms.mass_matrix import apply_inertia, mass_parameter_levels, world_inertia, world_inertia_parameters
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.topology import dofs_from_levels, dofs_to_levels, gather, scatter, split_slots, to_levels
from sodyn.unit_columns import gather_unit_columns, sum_of_column_products

#: Levels per scan step in the three sweeps of world-axes forward dynamics (poses, the fused
#: Riccati and innovations gather, the acceleration scatter): fewer, longer loop steps pay off
#: over a batch.  The mass matrix, ``𝓜⁻¹`` and the body-frame forward dynamics keep one level
#: per step, which two levels do not speed up.
FORWARD_UNROLL = 2


def _riccati_kernel(p: jax.Array, h: jax.Array, armature: jax.Array):
    """One kernel's slots of a Riccati level in world axes (Jain Alg. 7.1).

    ``p`` ``(Wk, 6, 6)``, ``h`` the world axes as rows ``(Wk, nv_k, 6)``.  Returns ``P⁺``,
    ``U = P H*`` as rows ``(Wk, nv_k, 6)``, ``D``, ``D⁻¹`` and ``G* = D⁻¹ U*`` as rows.
    """
    u = spatial.mv(p[:, None], h)
    d = contract("...aj,...bj->...ab", h, u)
    d = d + armature[..., None] * jnp.eye(d.shape[-1], dtype=d.dtype)
    dinv = spatial.spd_inverse(d)
    g = spatial.mm(dinv, u)
    p_plus = p - spatial.mtm(u, g)
    return p_plus, u, d, dinv, g


def _innovation_kernel(z, h, u, dinv, t):
    """``ν = D⁻¹ (T − H z)`` and ``z⁺ = z + U ν`` (Jain Alg. 7.2) for world-axis rows ``h``,
    ``u`` ``(..., nv_k, 6)``, forces ``z`` ``(..., 6)`` and joint forces ``t`` ``(..., nv_k)``."""
    nu = spatial.mv(dinv, t - spatial.mv(h, z))
    return z + spatial.mtv(u, nu), nu


def world_riccati_levels(model: Model, wr: jax.Array, wp: jax.Array, axes: list[jax.Array]) -> tuple:
    """The Riccati recursion in world axes, ``P(k) = M_w(k) + Σ_c P⁺(c)``.

    Returns, per kernel, ``(U, D, D⁻¹)`` with ``U`` stored as rows ``(1, Wk, nv_k, 6)``.
    Padding slots get a unit armature so that their ``D`` stays invertible (their world
    axes are zero); nothing they compute reaches a real body.
    """
    topo = model.topology
    dtype = wp.dtype
    arm_blocks = dofs_to_levels(topo, model_params(model, dtype).armature, 1.0)

    def step(from_children, x, xk, slices):
        big_p = world_inertia(*x) + from_children
        p_plus, per_kernel = [], []
        for pk, (h, arm) in zip(split_slots(big_p, slices), xk):
            pp, u, d, dinv, _ = _riccati_kernel(pk, h, arm)
            p_plus.append(pp)
            per_kernel.append((u, d, dinv))
        return jnp.concatenate(p_plus, axis=0), ((), tuple(per_kernel))

    _, per_kernel = gather(
        topo, step, jnp.zeros((6, 6), dtype), mass_parameter_levels(model, dtype) + (wr, wp),
        tuple(zip(axes, arm_blocks)),
    )
    return per_kernel


def _accelerations(topo, axes, nus, gs, coriolis, root_acceleration, unroll: int = 1) -> jax.Array:
    """The acceleration scatter of Lemma 7.6 in world axes: ``θ̈ = ν − G* α(℘(k))``,
    ``α = α(℘(k)) + H*_w θ̈ + a`` (``a`` omitted when ``coriolis`` is ``None``)."""

    def down(parent_acc, x, xk, slices):
        qdd, motion = [], []
        for ak, (h, nu, g) in zip(split_slots(parent_acc, slices), xk):
            qk = nu - spatial.mv(g, ak)
            qdd.append(qk)
            motion.append(spatial.mtv(h, qk))
        acc = parent_acc + jnp.concatenate(motion, axis=0)
        return (acc + x[0] if x else acc), ((), tuple(qdd))

    xs = () if coriolis is None else (coriolis,)
    _, qdd = scatter(topo, down, root_acceleration, xs, tuple(zip(axes, nus, gs)), unroll=unroll)
    return dofs_from_levels(topo, list(qdd))


def forward_dynamics(model: Model, q, v, tau, f_ext=None) -> jax.Array:
    """Joint accelerations ``θ̈`` by the O(N) articulated-body algorithm (Jain Lemma 7.6), in
    world axes for float64 and in body frames below it (module docstring).

    Gravity, external forces ``f_ext`` ``(n_bodies, 6)`` (body frame), joint damping
    (``τ − damping ⊙ v``) and armature (added to ``D``) are included, consistently with
    :func:`sodyn.inverse_dynamics`.  The Riccati and innovations recursions run fused in one
    gather (Jain Alg. 7.1 and 7.2 share their tip-to-base sweep), then one scatter; world
    poses take a third.

    Derivatives (forward and reverse mode, with respect to the model's parameters too) come
    from the implicit function theorem on ``ID(q, v, θ̈) = τ`` rather than from
    differentiating the recursions: ``dθ̈ = 𝓜⁻¹ (dτ − ∂ID/∂(q, v, params, f_ext) · d(…))``,
    with ``𝓜⁻¹`` applied in O(N) by the innovations sweeps (Lemma 7.5) on the Riccati
    quantities of the forward pass, and the partials of ID at fixed ``θ̈`` by differentiating
    the Newton–Euler recursions (Carpentier & Mansard's analytical ABA derivatives take the
    same route).
    """
    q, v, tau, f_ext = check_state(model, q, v, tau, "tau", f_ext)
    return _forward_dynamics(model, q, v, tau, f_ext)


def in_world_axes(dtype) -> bool:
    """Whether the recursions of this module serve ``dtype``: float64 and wider.  Narrower
    floats keep the body-frame recursions (module docstring)."""
    return jnp.finfo(dtype).bits >= 64


@jax.custom_jvp
def _forward_dynamics(model: Model, q, v, tau, f_ext):
    return _solve(model, q, v, tau, f_ext)[0]


@_forward_dynamics.defjvp
def _forward_dynamics_jvp(primals, tangents):
    model, q, v, tau, f_ext = primals
    d_model, dq, dv, dtau, df = tangents
    qdd, inverse_mass_matrix_times = _solve(model, q, v, tau, f_ext)

    def id_at_fixed_acceleration(m, q, v, f):
        return inverse_dynamics(m, q, v, qdd, f)

    _, d_id = jax.jvp(id_at_fixed_acceleration, (model, q, v, f_ext), (d_model, dq, dv, df))
    return qdd, inverse_mass_matrix_times(dtau - d_id)


def _solve(model: Model, q, v, tau, f_ext) -> tuple[jax.Array, Callable[[jax.Array], jax.Array]]:
    """``θ̈`` and ``x ↦ 𝓜⁻¹ x`` on the same Riccati quantities, in world axes for float64."""
    if not in_world_axes(q.dtype):
        return body_frame_forward(model, q, v, tau, f_ext)
    qdd, axes, riccati = _articulated_forward(model, q, v, tau, f_ext)
    return qdd, functools.partial(_inverse_times, model.topology, axes, riccati)


def _articulated_forward(model: Model, q, v, tau, f_ext):
    """The fused ABA in world axes; returns ``θ̈``, the world joint axes and, per kernel, the
    Riccati quantities ``(U, D⁻¹, G*)`` (rows) for :func:`_inverse_times`."""
    dtype = q.dtype
    topo = model.topology
    m = model_params(model, dtype)
    v_blocks = dofs_to_levels(topo, v, 0.0)
    unroll = FORWARD_UNROLL
    wr, wp, axes, vel, joint_motion = world_kinematics_levels(prepare(model, q), topo, v_blocks, unroll)
    coriolis = spatial.motion_cross(vel, joint_motion)
    inertia = world_inertia_parameters(*mass_parameter_levels(model, dtype), wr, wp)
    bias = spatial.force_cross(vel, apply_inertia(*inertia, vel))
    if f_ext is not None:
        bias = bias - spatial.force_to_parent(wr, wp, to_levels(topo, f_ext, jnp.zeros(6, dtype)))
    t_blocks = dofs_to_levels(topo, tau - m.damping * v, 0.0)
    arm_blocks = dofs_to_levels(topo, m.armature, 1.0)  # padding: see world_riccati_levels

    def up(from_children, x, xk, slices):
        inertia, cor, b = x
        p_children, z_children = from_children
        big_p = spatial.inertia_from_parameters(*inertia) + p_children
        z = spatial.mv(big_p, cor) + b + z_children
        p_plus, z_plus, outs = [], [], []
        for pk, zk, (h, arm, t) in zip(split_slots(big_p, slices), split_slots(z, slices), xk):
            pp, u, _, dinv, g = _riccati_kernel(pk, h, arm)
            zp, nu = _innovation_kernel(zk, h, u, dinv, t)
            p_plus.append(pp)
            z_plus.append(zp)
            outs.append((nu, u, dinv, g))
        return (jnp.concatenate(p_plus, axis=0), jnp.concatenate(z_plus, axis=0)), ((), tuple(outs))

    zero = (jnp.zeros((6, 6), dtype), jnp.zeros(6, dtype))
    kernel_xs = tuple(zip(axes, arm_blocks, t_blocks))
    _, per_kernel = gather(topo, up, zero, (inertia, coriolis, bias), kernel_xs, unroll=unroll)
    nus = [o[0] for o in per_kernel]
    gs = [o[3] for o in per_kernel]
    qdd = _accelerations(topo, axes, nus, gs, coriolis, gravity_acceleration(m, dtype), unroll)
    return qdd, axes, tuple(o[1:] for o in per_kernel)


def _inverse_times(topo, axes, riccati, x: jax.Array) -> jax.Array:
    """``𝓜⁻¹ x`` by the innovations gather and acceleration scatter in world axes (Lemma 7.5),
    from the per-kernel ``(U, D⁻¹, G*)`` of :func:`_articulated_forward`."""
    dtype = x.dtype

    def up(z, _, xk, slices):
        z_plus, nus = [], []
        for zk, (h, (u, dinv, _g), t) in zip(split_slots(z, slices), xk):
            zp, nu = _innovation_kernel(zk, h, u, dinv, t)
            z_plus.append(zp)
            nus.append(nu)
        return jnp.concatenate(z_plus, axis=0), ((), tuple(nus))

    _, nus = gather(topo, up, jnp.zeros(6, dtype), (), tuple(zip(axes, riccati, dofs_to_levels(topo, x, 0.0))))
    return _accelerations(topo, axes, list(nus), [r[2] for r in riccati], None, jnp.zeros(6, dtype))


def inverse_mass_matrix(model: Model, q) -> jax.Array:
    """``𝓜⁻¹`` ``(nv, nv)`` from ``[I − HψK]* D⁻¹ [I − HψK]`` (Jain eq. 7.20), 𝓜 never formed.

    With ``N = D⁻¹ [I − HψK]`` (the innovations ``ν`` of the unit vectors, Lemma 7.5),
    ``𝓜⁻¹ = N* D N = Σ_c ν_c(e_a) · D ν_c(e_b)``.  The Riccati recursion and the innovations
    of all unit vectors run in world axes (float64; body frames below it, see the module
    docstring), the unit vectors swept together,
    each segment of levels carrying only the columns its subtrees can see, and the sum over
    ``c`` is formed per subtree (:mod:`sodyn.unit_columns`), rather than sweeping ``nv`` full
    columns in body frames and taking one ``nv × nv`` product.
    """
    q = check_vector(model, q, model.nq, "q")
    if not in_world_axes(q.dtype):
        return body_frame_inverse_mass_matrix(model, q)
    topo = model.topology
    levels = prepare(model, q)
    wr, wp = centred_world_poses_levels(levels, topo)
    axes = world_subspace_blocks(levels, wr, wp)
    riccati = world_riccati_levels(model, wr, wp, axes)

    def step(z, _, xk, slices):
        z_plus, outs = [], []
        for zk, ((h, u, d, dinv), unit) in zip(split_slots(z, slices), xk):
            # columns (Wk, C, ·): the slot's quantities broadcast over them
            zp, nu = _innovation_kernel(zk, h[:, None], u[:, None], dinv[:, None], unit)
            z_plus.append(zp)
            outs.append((nu, spatial.mv(d[:, None], nu)))
        return jnp.concatenate(z_plus, axis=0), tuple(outs)

    kernel_xs = tuple((h,) + r for h, r in zip(axes, riccati))
    per_segment = gather_unit_columns(topo, step, 6, (), kernel_xs, q.dtype)
    nus = [[o[0] for o in seg] for seg in per_segment]
    d_nus = [[o[1] for o in seg] for seg in per_segment]
    minv = sum_of_column_products(topo, nus, d_nus)
    return 0.5 * (minv + minv.T)
