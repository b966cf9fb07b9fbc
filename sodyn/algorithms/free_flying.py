"""Free-flying systems (Jain Ch. 17): the dual articulated-body sweep, the base-invariant
forward dynamics and the per-body operational-space inertias.

A free-flying tree (each root attached to the world by a free joint) has, besides the
regular articulated-body quantities ``P(k), P⁺(k), z(k), z⁺(k)`` of the Riccati gather (tips
to base, Alg. 7.1/7.2; the base's 6-dof hinge gives ``P⁺ = 0``, eq. 17.1), the *dual*
quantities of the same tree rooted at body ``k`` itself: ``S⁺(k)``, the inertia of everything
on the parent's side of hinge ``k`` referred to ``O_k``, and ``S(k) = τ̄_dl(k) S⁺(k)``, the same
seen through hinge ``k`` (Alg. 17.1), with the residual forces ``z⁺_dl, z_dl`` (Alg. 17.2, with
the digest's errata).  On a tree (§17.2.4), hinge ``k`` sees its parent ``p``, the parent's
own dual side, and the subtrees of its siblings; since ``P(p)`` and ``z(p)`` already sum every
child, the siblings' share is ``P(p)`` (``z(p)``) less body ``k``'s own contribution, and the
dual recursion is one base-to-tips scatter:

    S⁺(k)    = φ(k, p) [P(p) + S(p)] φ*(k, p) − P⁺(k)
    z⁺_dl(k) = φ(k, p) [z(p) + z_dl(p) − P(p) a(p)] − z⁺(k) + S⁺(k) a_dl(k),   a_dl(k) = −a(k)
    D_dl(k)  = H(k) S⁺(k) H*(k),   G_dl(k) = −S⁺(k) H*(k) D_dl⁻¹(k),   τ̄_dl(k) = I + G_dl(k) H(k)
    S(k)     = τ̄_dl(k) S⁺(k),   ε_dl(k) = T(k) + H(k) z⁺_dl(k),   ν_dl(k) = D_dl⁻¹(k) ε_dl(k)
    z_dl(k)  = z⁺_dl(k) + G_dl(k) ε_dl(k)

At a root, the dual side is the world, which the free joint couples to the root only by its
joint force and armature ``I_a`` (the world accelerating by ``α⁺(root)``): ``S(root) = I_a``
and ``z_dl(root) = −T(root) − I_a α⁺(root)``, both zero for a plain free joint.  Adding the
regular and dual inter-link forces (17.9) and (17.10) eliminates ``f(k)`` (Lemma 17.1):

    α(k) = −[P(k) + S(k)]⁻¹ [z(k) + z_dl(k) − P(k) a(k)],   θ̈(k) = ν_dl(k) − G*_dl(k) α(k)   (17.12)

per body, with no acceleration sweep (Alg. 17.3), and ``P(k) + S(k) = Υ(k)⁻¹ = Λ(k)`` is the
operational-space inertia of body ``k``'s frame (Lemma 17.5, Alg. 17.5).  Since the regular
quantities enter the scatter only as ``P(p) + S(p)`` and ``z(p) + z_dl(p) − P(p) a(p)``
(``= −Λ(p) α(p)``), the scatter carries those two.

Conventions: body frames (the ``"local"`` convention of :mod:`sodyn.algorithms.articulated`);
gravity as the world's acceleration ``−g`` (Jain's 𝔤, see the digests' errata), so the
accelerations ``α(k)`` are those of :func:`sodyn.body_accelerations` with ``gravity=True``.
Joint damping and the free joints' linear-armature velocity force (``τ − passive_joint_force``),
armature (in ``D_dl``, as in ``D``) and external forces are included, as in
:func:`sodyn.forward_dynamics`.  The dual sweep's per-body ``6 × 6`` solves use the
closed-form :func:`sodyn.spatial.spd_inverse` (no LAPACK call inside a recursion).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.articulated import armature_blocks, articulated_gather, riccati_kernel
from sodyn.algorithms.common import (
    check_state,
    check_vector,
    gravity_acceleration,
    model_params,
    passive_joint_force,
    prepare,
)
from sodyn.algorithms.conventions import Frames, body_frames, forward_terms
from sodyn.model import Model
from sodyn.sweeps import Fields, in_slots, scatter
from sodyn.topology import dofs_from_levels, dofs_to_levels, from_levels


def check_free_flying(model: Model, what: str) -> None:
    """Raise a ``ValueError`` unless every root of ``model`` has a free joint and no other body does."""
    for k, (parent, jt) in enumerate(zip(model.parent, model.joint_types)):
        if parent < 0 and jt != "free":
            raise ValueError(
                f"{what} needs a free-flying model: body {model.body_names[k]!r} is attached to the world by a "
                f"{jt!r} joint ({model.joint_names[k]!r}); load the model with a floating base")
        if parent >= 0 and jt == "free":
            raise ValueError(f"{what}: free joint {model.joint_names[k]!r} on body {model.body_names[k]!r} is not "
                             "at a root; only the roots of a free-flying tree may have free joints")


# ---------------------------------------------------------------------------
# the regular gather (Alg. 7.1, 7.2), the dual scatter (Alg. 17.1, 17.2 on a tree), Lemma 17.1
# ---------------------------------------------------------------------------


class _Regular(NamedTuple):
    """The regular articulated-body quantities in the slot layout ``(1, W, ...)``."""

    P: jax.Array
    P_plus: jax.Array
    z: jax.Array | None
    z_plus: jax.Array | None


def _regular_gather(model: Model, frames: Frames, t_blocks=None, coriolis=None, bias=None) -> _Regular:
    """The Riccati gather (Alg. 7.1) and, with ``t_blocks``, the residual forces (Alg. 7.2)
    ``z(k) = P(k) a(k) + b(k) + Σ_c φ(k, c) z⁺(c)``, ``z⁺(k) = z(k) + U(k) ν(k)``, per body (the
    articulated-body forward dynamics discards them)."""
    names = _Regular._fields if t_blocks is not None else ("P", "P_plus")
    g = articulated_gather(model, frames, t_blocks, coriolis=coriolis, bias=bias, factors=(), bodies=names)
    return _Regular(**{name: g.bodies.get(name) for name in _Regular._fields})


def _inertia_to_child(pose, inertia: jax.Array) -> jax.Array:
    """``φ(k, ℘(k)) X φ*(k, ℘(k))``: a parent's symmetric force-side 6 × 6 in the child's frame."""
    return spatial.inertia_to_parent(*spatial.inverse_transform(*pose), inertia)


def _dual_scatter(model: Model, frames: Frames, reg: _Regular, t_blocks=None, coriolis=None):
    """The dual recursion (module docstring) as one scatter.  Returns, in the slot layout,
    ``S⁺``, ``S`` and ``Λ = P + S``, or, with forces, the accelerations ``α`` (Lemma 17.1), and
    the joint accelerations ``θ̈`` (17.12)."""
    topo = model.topology
    dtype = reg.P.dtype
    forces = t_blocks is not None
    eye = jnp.eye(6, dtype=dtype)
    pad = jnp.asarray(~topo.mask[..., None, None], dtype) * eye  # Λ = I on padding slots

    def kernel_step(kernel, s_plus, big_p, zdl_plus, a_plus, z, cor, pad):
        k = kernel.x
        if kernel.kind == "free":  # a root: the world side holds only the joint's force and armature
            s = k.armature[..., None] * eye
            zdl = -k.force - k.armature * a_plus if forces else None
        else:
            s, ric = riccati_kernel(s_plus, k.axes, k.armature)  # S = S⁺ − U* D_dl⁻¹ U (U = H S⁺): τ̄_dl S⁺
            if forces:
                nu = spatial.mv(ric.D_inv, k.force + k.axes.transpose_times(zdl_plus))  # ν_dl = D_dl⁻¹ ε_dl
                zdl = zdl_plus - spatial.mtv(ric.U, nu)  # z_dl = z⁺_dl + G_dl ε_dl
        lam = big_p + s
        if not forces:
            return (lam, jnp.zeros(lam.shape[:-1], dtype)), (s_plus, s, lam)
        w = z + zdl - spatial.mv(big_p, cor)  # −Λ α
        alpha = -spatial.mv(spatial.spd_inverse(lam + pad), w)  # Lemma 17.1
        # (17.12): θ̈ = ν_dl − G*_dl α = ν_dl + D_dl⁻¹ U α;  at a root (H = I, a = 0): θ̈ = α − α⁺
        qdd = alpha - a_plus if kernel.kind == "free" else nu + spatial.mv(ric.G, alpha)
        return (lam, w), (alpha, qdd)

    def step(parent, level):
        x = level.x
        lam_p, w_p = parent  # P(p) + S(p) and z(p) + z_dl(p) − P(p) a(p) = −Λ(p) α(p)
        s_plus = _inertia_to_child(x.pose, lam_p) - x.P_plus
        zdl_plus = a_plus = None
        if forces:
            zdl_plus = spatial.force_to_child(*x.pose, w_p) - x.z_plus - spatial.mv(s_plus, x.coriolis)
            a_plus = spatial.motion_to_child(*x.pose, gravity)  # α⁺ of a root: the world's −g
        return level.each_kernel(kernel_step, s_plus, x.P, zdl_plus, a_plus, x.z, x.coriolis, x.pad)

    gravity = gravity_acceleration(model_params(model, dtype), dtype)
    root = (jnp.zeros((6, 6), dtype), jnp.zeros(6, dtype))
    kernel_xs = Fields(axes=frames.axes, armature=armature_blocks(model, dtype), force=t_blocks)
    xs = Fields(pose=frames.pose, P=reg.P, P_plus=reg.P_plus, z=reg.z, z_plus=reg.z_plus, coriolis=coriolis, pad=pad)
    outs = scatter(topo, step, root, xs, kernel_xs)
    if not forces:
        return in_slots(outs)
    return in_slots(tuple(o[0] for o in outs)), dofs_from_levels(topo, [o[1] for o in outs])


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


class FreeFlyingInertias(NamedTuple):
    """The regular and dual articulated-body inertias of a free-flying tree (Jain Alg. 17.1),
    ``(n_bodies, 6, 6)`` each, about each body frame: ``P``, ``P_plus`` (``P⁺``), ``S``,
    ``S_plus`` (``S⁺``), and ``Lambda = P + S``, the operational-space inertia of each body's
    frame (Lemma 17.5); ``P⁺ + S⁺ = φ(k, ℘(k)) Λ(℘(k)) φ*(k, ℘(k))`` (``[Υ⁺(k)]⁻¹``)."""

    P: jax.Array
    P_plus: jax.Array
    S: jax.Array
    S_plus: jax.Array
    Lambda: jax.Array


def free_flying_inertias(model: Model, q) -> FreeFlyingInertias:
    """The regular (Alg. 7.1) and dual (Alg. 17.1, tree form in the module docstring)
    articulated-body inertias, and ``Λ(k) = P(k) + S(k)`` (Alg. 17.5), in O(N): one gather,
    one scatter.  ``model`` must be free-flying (every root on a free joint)."""
    check_free_flying(model, "free_flying_inertias")
    q = check_vector(model, q, model.nq, "q")
    frames = body_frames(model, prepare(model, q))
    reg = _regular_gather(model, frames)
    s_plus, s, lam = _dual_scatter(model, frames, reg)
    topo = model.topology
    return FreeFlyingInertias(*(from_levels(topo, x) for x in (reg.P, reg.P_plus, s, s_plus, lam)))


def body_operational_space_inertias(model: Model, q) -> jax.Array:
    """Every body's operational-space inertia ``Λ(k) = Υ(k)⁻¹ = P(k) + S(k)`` ``(n_bodies, 6, 6)``
    (Jain Alg. 17.5, Lemma 17.5), the ``Λ`` of a 6D :class:`~sodyn.FrameTask` at the body frame
    in local axes, for all bodies at once in O(N) and without inverting a compliance.
    ``model`` must be free-flying (for a fixed base, ``Υ(k)`` is singular)."""
    return free_flying_inertias(model, q).Lambda


class BaseInvariantDynamics(NamedTuple):
    """Result of :func:`base_invariant_forward_dynamics`: joint accelerations ``qdd`` ``(nv,)``
    and body accelerations ``alpha`` ``(n_bodies, 6)`` (body frames, the world accelerating by
    ``−g``: :func:`sodyn.body_accelerations` with ``gravity=True``)."""

    qdd: jax.Array
    alpha: jax.Array


def base_invariant_forward_dynamics(model: Model, q, v, tau, f_ext=None) -> BaseInvariantDynamics:
    """Forward dynamics of a free-flying tree by Jain's Alg. 17.3: the regular articulated-body
    gather and the dual scatter, then per body ``α(k)`` from Lemma 17.1 and ``θ̈(k)`` from (17.12),
    with no acceleration sweep.  Same inputs and results as :func:`sodyn.forward_dynamics`
    (gravity, damping, armature, ``f_ext`` in body frames), which it agrees with; differentiated
    through the recursions (no custom rule)."""
    check_free_flying(model, "base_invariant_forward_dynamics")
    q, v, tau, f_ext = check_state(model, q, v, tau, "tau", f_ext)
    topo = model.topology
    m = model_params(model, q.dtype)
    frames, coriolis, bias = forward_terms(model, q, v, f_ext, "local", 1)
    t_blocks = dofs_to_levels(topo, tau - passive_joint_force(m, v), 0.0)
    reg = _regular_gather(model, frames, t_blocks, coriolis, bias)
    alpha, qdd = _dual_scatter(model, frames, reg, t_blocks, coriolis)
    return BaseInvariantDynamics(qdd, from_levels(topo, alpha))


__all__ = [
    "BaseInvariantDynamics",
    "FreeFlyingInertias",
    "base_invariant_forward_dynamics",
    "body_operational_space_inertias",
    "check_free_flying",
    "free_flying_inertias",
]
