"""The articulated-body recursions (Jain Ch. 6–7, tree form §9.4) and forward dynamics: the
one Riccati/innovations gather (:func:`articulated_gather`) and the acceleration scatter that
forward, hybrid, free-flying, constrained and operational-space dynamics and ``𝓜⁻¹``
(:mod:`sodyn.algorithms.inverse_mass_matrix`) are built from.

Riccati recursion (Alg. 7.1; one gather, tips to base), with ``U* = H P`` and ``G* = D⁻¹ U*``
kept as rows:

    P(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) P⁺(c) φ*(k, c)
    D(k) = H(k) P(k) H*(k) + armature(k),     P⁺(k) = P(k) − U(k) G*(k)

Innovations (Alg. 7.2, gather) and accelerations (Lemma 7.6, scatter):

    z(k) = P(k) a(k) + b(k) − f_ext(k) + Σ_c φ(k, c) z⁺(c)
    ε(k) = T(k) − H(k) z(k),   ν(k) = D⁻¹(k) ε(k),   z⁺(k) = z(k) + U(k) ν(k)
    α⁺(k) = φ*(℘(k), k) α(℘(k)),   θ̈(k) = ν(k) − G*(k) α⁺(k),   α(k) = α⁺(k) + H*(k) θ̈(k) + a(k)

Forward dynamics runs the first two fused in one gather, then the scatter.  With ``a = b = 0``
and ``T = x`` the innovations and accelerations give ``𝓜⁻¹ x = [I − HψK]* D⁻¹ [I − HψK] x``
(Lemma 7.5) in O(N) without forming 𝓜, and ``log det 𝓜 = Σ_k log det D(k)`` (Lemma 7.3).
``D``, ``ν`` and ``θ̈`` are joint-space quantities, the same in every frame.

The frames the recursions run in (the ``convention`` argument) are those of
:mod:`sodyn.algorithms.conventions`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from sodyn import spatial
from sodyn.algorithms.common import (
    JointAxes,
    check_state,
    gravity_acceleration,
    model_params,
    passive_joint_force,
)
from sodyn.algorithms.conventions import (
    CONVENTIONS,
    Convention,
    Frames,
    check_convention,
    expand_slots,
    forward_terms,
    pose_force_to_parent,
    pose_inertia_to_parent,
    pose_motion_to_child,
)
from sodyn.algorithms.inverse_dynamics import unchecked_inverse_dynamics
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.sweeps import Fields, gather, in_slots, scatter
from sodyn.topology import dofs_from_levels, dofs_to_levels, to_levels

#: The name (:func:`jax.ad_checkpoint.checkpoint_name`) that forward dynamics gives, in its
#: derivative, to its acceleration and its Riccati quantities: what a rematerialised computation
#: keeps for its reverse pass (``jax.checkpoint(policy=save_only_these_names(FACTORS))``, as
#: :func:`sodyn.simulate.step` is), so that pass recomputes kinematics and force laws but not
#: the Riccati sweep.
FACTORS = "sodyn.forward_dynamics.factors"


# ---------------------------------------------------------------------------
# one slot's Riccati and innovations steps
# ---------------------------------------------------------------------------


class RiccatiKernel(NamedTuple):
    """One kernel's Riccati quantities: ``U* = H P`` and ``G* = D⁻¹ U*`` as rows
    ``(..., nv_k, 6)``, ``D`` and ``D⁻¹`` ``(..., nv_k, nv_k)``."""

    U: jax.Array
    D: jax.Array
    D_inv: jax.Array
    G: jax.Array


def riccati_kernel(p: jax.Array, axes: JointAxes, armature: jax.Array,
                   free: jax.Array | None = None) -> tuple[jax.Array, RiccatiKernel]:
    """``P⁺ = P − U G*`` and the kernel's :class:`RiccatiKernel` (Jain Alg. 7.1).

    ``free`` ``(..., nv_k)`` (0 or 1, or ``None`` for all 1) marks the dofs whose acceleration
    the recursion solves for; the others are locked, as the active hinges of Jain Alg. 16.1.
    ``D⁻¹`` is then the inverse ``D_p⁻¹`` of the free dofs' block ``D_p = H_p P H_p*``
    embedded with zeros, so ``G* = D⁻¹ U*`` has zero rows and ``P⁺ = P − U_p D_p⁻¹ U_p*``
    (eq. 16.7; ``P⁺ = P`` for a locked joint).  ``D`` stays the whole joint's ``H P H* +``
    armature.
    """
    u = axes.transpose_times_matrix(p)
    d = axes.transpose_times(u)
    d = d + armature[..., None] * jnp.eye(d.shape[-1], dtype=d.dtype)
    if free is None:
        dinv = spatial.spd_inverse(d)
    else:  # [[D_p, 0], [0, 1]]⁻¹ with the locked block zeroed: D_p⁻¹ embedded
        pair = free[..., :, None] * free[..., None, :]
        dinv = spatial.spd_inverse(d * pair + (1.0 - free)[..., None] * jnp.eye(d.shape[-1], dtype=d.dtype)) * pair
    g = spatial.mm(dinv, u)
    return p - spatial.mtm(u, g), RiccatiKernel(u, d, dinv, g)


def innovation_kernel(z: jax.Array, axes: JointAxes, ric: RiccatiKernel, t: jax.Array):
    """``ν = D⁻¹ (T − H z)`` and ``z⁺ = z + U ν`` (Jain Alg. 7.2); ``z`` ``(..., 6)`` may carry
    columns after the slot axis, which ``ric`` is broadcast over."""
    extra = z.ndim - ric.U.ndim + 1
    u, dinv = (expand_slots(x, extra) for x in (ric.U, ric.D_inv))
    nu = spatial.mv(dinv, t - axes.transpose_times(z))
    return z + spatial.mtv(u, nu), nu


# ---------------------------------------------------------------------------
# the sweeps
# ---------------------------------------------------------------------------


class ArticulatedBodies(NamedTuple):
    """The Riccati quantities in the slot layout: per kernel a :class:`RiccatiKernel` of
    ``(1, W_k, ...)`` arrays, and the articulated inertias ``P`` and ``P⁺`` ``(1, W, 6, 6)``
    (``None`` unless asked for)."""

    kernels: tuple[RiccatiKernel, ...]
    P: jax.Array | None = None
    P_plus: jax.Array | None = None


class InnovationColumns(NamedTuple):
    """The innovations of ``n`` columns of joint forces ``x_c`` swept beside the forces (the
    ``columns`` of :func:`articulated_gather`): per kernel ``ν_c = N x_c`` ``(1, W_k, n, nv_k)``;
    ``gram`` ``(n, n)``, the compliance ``x_c* 𝓜⁻¹ x_d``; ``work`` ``(n,)``, ``x_c* θ̈`` for the
    ``θ̈`` of the acceleration scatter of the sweep's own ``ν`` from rest, without velocity terms."""

    nu: list[jax.Array]
    gram: jax.Array
    work: jax.Array


class Gathered(NamedTuple):
    """What :func:`articulated_gather` returns (each part ``None`` unless asked for).

    ``nu``: per kernel the innovations ``ν`` ``(1, W_k, nv_k)``; ``factors``: the Riccati
    quantities; ``columns``: the :class:`InnovationColumns`; ``bodies``: for each name asked for
    among ``"P", "P_plus", "z", "z_plus"`` (``P``, ``P⁺``, ``z``, ``z⁺``) its slot layout
    ``(1, W, ...)``; ``joint_bias``: per kernel ``H ẑ``, the joint-space share of ``z`` not coming
    from the velocity terms (``ẑ = z − P a``).
    """

    nu: list[jax.Array] | None
    factors: ArticulatedBodies
    columns: InnovationColumns | None = None
    bodies: dict | None = None
    joint_bias: list[jax.Array] | None = None


def armature_blocks(model: Model, dtype) -> list[jax.Array]:
    """Per kernel ``(1, W_k, nv_k)`` armature; padding slots get one, so their ``D`` stays
    invertible (nothing they compute reaches a real body)."""
    return dofs_to_levels(model.topology, model_params(model, dtype).armature, 1.0)


class _KernelOut(NamedTuple):
    """One kernel's outputs of the fused gather (``None`` fields are not swept out)."""

    factors: RiccatiKernel
    nu: jax.Array | None = None
    nu_c: jax.Array | None = None
    eps_c: jax.Array | None = None
    bodies: dict | None = None
    joint_bias: jax.Array | None = None


def articulated_gather(model: Model, frames: Frames, forces=None, *, coriolis=None, bias=None, added=None,
                       free=None, columns=None, factors: tuple[str, ...] = ("U", "D_inv", "G"),
                       bodies: tuple[str, ...] = (), joint_bias: bool = False, unroll: int = 1) -> Gathered:
    """The Riccati and innovations recursions fused in one gather (Jain Alg. 7.1 and 7.2 share
    their tip-to-base sweep): the one articulated-body gather of every dynamics algorithm.

    Per body ``P(k) = M(k) + B(k) + Σ_c φ(k, c) P⁺(c)`` (``B = added`` ``(1, W, 6, 6)``, if given)
    and, with joint ``forces`` ``T`` (per kernel ``(1, W_k, nv_k)``),
    ``z(k) = P(k) a(k) + b(k) + Σ_c φ(k, c) z⁺(c)`` with the velocity terms ``a = coriolis`` and
    bias forces ``b = bias`` (each zero if ``None``), and ``ν = D⁻¹ (T − H z)``,
    ``z⁺ = z + U ν``.  ``free`` (per kernel 0/1 ``(1, W_k, nv_k)``) locks the dofs marked 0, as
    the passive arm of Jain Alg. 16.1 (:func:`riccati_kernel`).  ``columns`` (per kernel
    ``(1, W_k, n, nv_k)``) sweeps the innovations of ``n`` more joint-force columns ``x_c`` at
    ``a = b = 0`` in the same gather: ``ε_c = x_c − H z_c``, ``ν_c = D⁻¹ ε_c``,
    ``z_c⁺ = z_c + U ν_c``.  With ``N = D⁻¹ [I − HψK]``, ``𝓜⁻¹ = N* D N`` (Lemma 7.5), so
    ``x_c* 𝓜⁻¹ y = Σ_k ε_c(k)* ν_y(k)``: the columns' compliance and work come out of the
    gather, without a scatter per column.  ``factors`` names the :class:`RiccatiKernel` fields
    kept; ``bodies`` (names) and ``joint_bias`` ask for the parts of :class:`Gathered` so named.
    """
    dtype = frames.inertia[0].dtype
    kernel_xs = Fields(axes=frames.axes, armature=armature_blocks(model, dtype), force=forces, free=free,
                       column=columns)

    def kernel_step(kernel, big_p, z, z_hat, z_c):
        k = kernel.x
        p_plus, ric = riccati_kernel(big_p, k.axes, k.armature, k.free)
        sent, out = [p_plus, None, None], _KernelOut(_kept(ric, factors))
        if z is not None:
            sent[1], nu = innovation_kernel(z, k.axes, ric, k.force)
            out = out._replace(nu=nu)
        if z_c is not None:
            eps = k.column - k.axes.transpose_times(z_c)
            nu_c = spatial.mv(ric.D_inv[:, None], eps)
            sent[2] = z_c + spatial.mtv(ric.U[:, None], nu_c)
            out = out._replace(nu_c=nu_c, eps_c=eps)
        if bodies:
            values = {"P": big_p, "P_plus": p_plus, "z": z, "z_plus": sent[1]}
            out = out._replace(bodies={name: values[name] for name in bodies})
        if z_hat is not None:
            out = out._replace(joint_bias=k.axes.transpose_times(z_hat))
        return sent, out

    def step(from_children, level):
        x = level.x
        p_children, z, z_c = from_children
        big_p = spatial.inertia_from_parameters(*x.inertia) + p_children
        big_p = big_p if x.added is None else big_p + x.added
        z_hat = None
        if z is not None:
            z = z if x.bias is None else z + x.bias
            z_hat, z = z, (z if x.coriolis is None else z + spatial.mv(big_p, x.coriolis))
        (p_plus, z_plus, z_c_plus), outs = level.each_kernel(
            kernel_step, big_p, z, z_hat if joint_bias else None, z_c)
        sent = (pose_inertia_to_parent(x.pose, p_plus),
                None if z is None else pose_force_to_parent(x.pose, z_plus),
                None if z_c is None else pose_force_to_parent(x.pose, z_c_plus))
        return sent, outs

    n = None if columns is None else columns[0].shape[-2]
    zero = (jnp.zeros((6, 6), dtype), None if forces is None else jnp.zeros(6, dtype),
            None if columns is None else jnp.zeros((n, 6), dtype))
    xs = Fields(pose=frames.pose, inertia=frames.inertia, coriolis=coriolis, bias=bias, added=added)
    outs = gather(model.topology, step, zero, xs, kernel_xs, unroll=unroll)
    nus = None if forces is None else [o.nu for o in outs]
    result = Gathered(nus, ArticulatedBodies(tuple(o.factors for o in outs)))
    if columns is not None:
        eps, nu_c = [o.eps_c for o in outs], [o.nu_c for o in outs]
        gram = sum(contract("...wid,...wjd->...ij", e, x) for e, x in zip(eps, nu_c))
        work = sum(contract("...wid,...wd->...i", e, x) for e, x in zip(eps, nus))
        result = result._replace(columns=InnovationColumns(nu_c, gram.reshape((n, n)), work.reshape((n,))))
    if bodies:
        result = result._replace(bodies=in_slots(tuple(o.bodies for o in outs)))
    if joint_bias:
        result = result._replace(joint_bias=[o.joint_bias for o in outs])
    return result


def riccati(model: Model, frames: Frames, with_inertias: bool = False) -> ArticulatedBodies:
    """The Riccati recursion (Jain Alg. 7.1) alone: every :class:`RiccatiKernel` field, and
    with ``with_inertias`` the articulated inertias ``P`` and ``P⁺``."""
    names = ("P", "P_plus") if with_inertias else ()
    g = articulated_gather(model, frames, factors=RiccatiKernel._fields, bodies=names)
    return g.factors if not with_inertias else g.factors._replace(**g.bodies)


def _kept(ric: RiccatiKernel, fields) -> RiccatiKernel:
    """``ric`` with only ``fields`` (the others ``None``, so they are not scan inputs or outputs)."""
    return RiccatiKernel(*(getattr(ric, f) if f in fields else None for f in RiccatiKernel._fields))


def _only(ab: ArticulatedBodies, *fields: str) -> tuple[RiccatiKernel, ...]:
    """The Riccati quantities a sweep reads."""
    return tuple(_kept(r, fields) for r in ab.kernels)


def innovations(model: Model, frames: Frames, ab: ArticulatedBodies, t_blocks, unroll: int = 1, *,
                coriolis=None, bias=None) -> list[jax.Array]:
    """The innovations gather (Jain Alg. 7.2) on Riccati quantities already swept: per kernel
    ``ν = D⁻¹ ε`` ``(1, W_k, nv_k)`` for joint forces ``t_blocks``, with
    ``z(k) = P(k) a(k) + b(k) + Σ_c φ(k, c) z⁺(c)`` for the velocity terms ``a = coriolis``
    (which needs ``ab.P``) and bias forces ``b = bias`` (each zero if ``None``)."""
    dtype = t_blocks[0].dtype

    def kernel_step(kernel, z):
        return innovation_kernel(z, kernel.x.axes, kernel.x.factors, kernel.x.force)

    def step(z, level):
        x = level.x
        z = z if x.bias is None else z + x.bias
        z = z if x.coriolis is None else z + spatial.mv(x.P, x.coriolis)
        z_plus, nus = level.each_kernel(kernel_step, z)
        return pose_force_to_parent(x.pose, z_plus), nus

    xs = Fields(pose=frames.pose, P=None if coriolis is None else ab.P, coriolis=coriolis, bias=bias)
    kernel_xs = Fields(axes=frames.axes, factors=_only(ab, "U", "D_inv"), force=t_blocks)
    return list(gather(model.topology, step, jnp.zeros(6, dtype), xs, kernel_xs, unroll=unroll))


def accelerations(model: Model, frames: Frames, ab: ArticulatedBodies, nus, root_acceleration,
                  coriolis=None, unroll: int = 1) -> jax.Array:
    """The acceleration scatter (Jain Lemma 7.6): ``θ̈ = ν − G* α⁺``, ``α = α⁺ + H* θ̈ + a``
    (``a`` omitted when ``coriolis`` is ``None``); returns ``θ̈`` ``(nv,)``."""

    def kernel_step(kernel, a_plus):
        k = kernel.x
        qdd = k.nu - spatial.mv(k.factors.G, a_plus)
        return k.axes.times(qdd), qdd

    def step(parent_acc, level):
        a_plus = pose_motion_to_child(level.x.pose, parent_acc)
        motion, qdd = level.each_kernel(kernel_step, a_plus)
        acc = a_plus + motion
        return (acc if level.x.coriolis is None else acc + level.x.coriolis), qdd

    kernel_xs = Fields(axes=frames.axes, factors=_only(ab, "G"), nu=nus)
    qdd = scatter(model.topology, step, root_acceleration, Fields(pose=frames.pose, coriolis=coriolis), kernel_xs,
                  unroll=unroll)
    return dofs_from_levels(model.topology, list(qdd))


def inverse_times(model: Model, frames: Frames, ab: ArticulatedBodies, x: jax.Array) -> jax.Array:
    """``𝓜⁻¹ x`` by the innovations gather and acceleration scatter (Jain Lemma 7.5)."""
    nus = innovations(model, frames, ab, dofs_to_levels(model.topology, x, 0.0), FORWARD_UNROLL)
    return accelerations(model, frames, ab, nus, jnp.zeros(6, x.dtype), unroll=FORWARD_UNROLL)


# ---------------------------------------------------------------------------
# forward dynamics
# ---------------------------------------------------------------------------


def forward_dynamics(model: Model, q, v, tau, f_ext=None, *, convention: Convention = "local",
                     added_inertia=None) -> jax.Array:
    """Joint accelerations ``θ̈`` by the O(N) articulated-body algorithm (Jain Lemma 7.6).

    Gravity, external forces ``f_ext`` ``(n_bodies, 6)`` (body frame), joint damping with
    a free joint's linear-armature velocity force (``τ − passive_joint_force(model, v)``,
    :func:`~sodyn.algorithms.common.passive_joint_force`) and armature (added to ``D``) are
    included, consistently with :func:`sodyn.inverse_dynamics`.  The Riccati and innovations recursions run fused in one
    gather (Alg. 7.1 and 7.2 share their tip-to-base sweep), then one scatter.  ``convention``
    picks the frames (module docstring): ``"local"`` (default) or ``"world"``.

    ``added_inertia`` ``B`` ``(n_bodies, 6, 6)`` (symmetric positive semi-definite, body
    frames, ``"local"`` only) is added to each body's inertia in the Riccati recursion, so the
    sweeps solve ``(𝓜 + Σ_k J_k* B_k J_k) θ̈ = τ − C(q, v) − Σ_k J_k* B_k ᾱ(k)``, with ``J_k`` body
    k's Jacobian and ``ᾱ(k) = J̇_k θ̇ − 𝔤(k)`` its acceleration at ``θ̈ = 0`` in the recursion
    (the world accelerating by ``−g``).  The linearly implicit stepper puts contact dampers
    and springs there (:mod:`sodyn.simulate.contact`).

    Derivatives (forward and reverse mode, with respect to the model's parameters too) come
    from the implicit function theorem on ``ID(q, v, θ̈) = τ`` rather than from
    differentiating the recursions: ``dθ̈ = 𝓜⁻¹ (dτ − ∂ID/∂(q, v, params, f_ext) · d(…))``,
    with ``𝓜⁻¹`` applied in O(N) by the innovations sweeps (Lemma 7.5) on the Riccati
    quantities of the forward pass, and the partials of ID at fixed ``θ̈`` by differentiating
    the Newton–Euler recursions (Carpentier & Mansard's analytical ABA derivatives take the
    same route).
    """
    check_convention(convention)
    q, v, tau, f_ext = check_state(model, q, v, tau, "tau", f_ext)
    if added_inertia is not None:
        added_inertia = jnp.asarray(added_inertia, q.dtype)
        if added_inertia.shape != (model.n_bodies, 6, 6):
            raise ValueError(f"added_inertia must have shape (n_bodies, 6, 6) = ({model.n_bodies}, 6, 6), "
                             f"got {added_inertia.shape}")
        if convention != "local":
            raise ValueError("added_inertia is given in body frames: use convention='local'")
        if f_ext is None:
            f_ext = jnp.zeros((model.n_bodies, 6), q.dtype)
    return _forward_dynamics(model, q, v, tau, f_ext, added_inertia, convention)


@functools.partial(jax.custom_jvp, nondiff_argnums=(6,))
def _forward_dynamics(model: Model, q, v, tau, f_ext, added, convention: str):
    return _ACCELERATIONS[convention](model, q, v, tau, f_ext, added)


def _accelerations(model: Model, q, v, tau, f_ext, added, convention: str) -> jax.Array:
    return _articulated_forward(model, q, v, tau, f_ext, convention, added)[0]


#: Per convention, ``θ̈`` of the fused ABA.
_ACCELERATIONS = {c: functools.partial(_accelerations, convention=c) for c in CONVENTIONS}


@_forward_dynamics.defjvp
def _forward_dynamics_jvp(convention, primals, tangents):
    model, q, v, tau, f_ext, added = primals
    qdd, frames, ab = _articulated_forward(model, q, v, tau, f_ext, convention, added)
    qdd, ab = checkpoint_name((qdd, ab), FACTORS)
    return qdd, implicit_tangent(primals, tangents, qdd, frames, ab)


def implicit_tangent(primals: tuple, tangents: tuple, qdd: jax.Array, frames: Frames, ab: ArticulatedBodies):
    """The tangent of ``θ̈`` solving ``ID(q, θ̇, θ̈, f_ext, B) = τ`` (the implicit function theorem):
    ``dθ̈ = 𝓜⁻¹ (dτ − ∂ID/∂(params, q, θ̇, f_ext, B) · d(…))`` at fixed ``θ̈``, with ``𝓜⁻¹``
    applied on the Riccati quantities ``ab`` (Lemma 7.5).  ``primals`` and ``tangents`` are
    ``(model, q, v, tau, f_ext, added)`` and theirs."""
    model, q, v, _, f_ext, added = primals[:6]
    d_model, dq, dv, dtau, df, d_added = tangents[:6]

    def id_at_fixed_acceleration(m, q, v, f, b):  # B_k acts on the body accelerations (world at −g)
        return unchecked_inverse_dynamics(m, q, v, qdd, f, b)

    _, d_id = jax.jvp(id_at_fixed_acceleration, (model, q, v, f_ext, added), (d_model, dq, dv, df, d_added))
    return inverse_times(model, frames, ab, dtau - d_id)


def _articulated_forward(model: Model, q, v, tau, f_ext, convention: str, added=None):
    """The fused ABA; returns ``θ̈``, the frames and the Riccati quantities (for ``𝓜⁻¹ x``)."""
    dtype = q.dtype
    m = model_params(model, dtype)
    unroll = FORWARD_UNROLL
    frames, coriolis, bias = forward_terms(model, q, v, f_ext, convention, unroll)
    t_blocks = dofs_to_levels(model.topology, tau - passive_joint_force(m, v), 0.0)
    if added is not None:
        added = to_levels(model.topology, added, jnp.zeros((6, 6), dtype))
    g = articulated_gather(model, frames, t_blocks, coriolis=coriolis, bias=bias, added=added, unroll=unroll)
    qdd = accelerations(model, frames, g.factors, g.nu, gravity_acceleration(m, dtype), coriolis, unroll)
    return qdd, frames, g.factors
