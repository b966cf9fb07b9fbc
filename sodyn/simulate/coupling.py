r"""Coupling passes of the linearly implicit step for contacts between two moving bodies.

The implicit step of :mod:`sodyn.simulate.stepping` applies, at each contact slot between
bodies 1 and 2, the force ``f_expl − K_eff (Δṗ₂ − Δṗ₁) / dt`` on body 2 (the opposite on body 1),
with ``Δṗ_k`` the change over the step of the velocity of body ``k``'s material point at the
contact (:mod:`sodyn.simulate.contact`).  One O(N) articulated-body solve can take only each
body's own term implicitly (``B_k``, a block-Jacobi splitting of ``Jᵀ K_eff J`` with
``J = J₂ − J₁``): it solves with ``𝓜_s = 𝓜 + diag(…) + Σ_k J_kᵀ B_k J_k`` and leaves out the
cross terms

    N = Σ_slots (J₁ᵀ K_eff J₂ + J₂ᵀ K_eff J₁),

whose forces are ``F₂ = K_eff p̈₁`` on body 2 and ``F₁ = K_eff p̈₂`` on body 1 for the material
points' accelerations ``p̈_k = R_k(α̇_k + ω̇_k × r_k)`` (``Δṗ = dt p̈``).  Left out, two bodies that
accelerate together through a contact each carry ``K_eff`` as added inertia along the normal.
The coupled step solves

    A θ̈ = r,        A = 𝓜_s − N,

and ``A`` is symmetric positive definite
(``J₁ᵀKJ₁ + J₂ᵀKJ₂ − (J₁ᵀKJ₂ + J₂ᵀKJ₁) = (J₂ − J₁)ᵀ K (J₂ − J₁)``).  The passes solve it by
conjugate gradients preconditioned with ``𝓜_s`` (Hestenes & Stiefel; Saad, *Iterative
Methods for Sparse Linear Systems*, Alg. 9.1), from the uncoupled solve ``θ̈₀ = 𝓜_s⁻¹ r``:

    z₀ = 𝓜_s⁻¹ N θ̈₀,  p₀ = z₀;   α_k = ⟨z_k, p_k⟩_𝓜 / p_kᵀ A p_k,   θ̈_{k+1} = θ̈_k + α_k p_k,
    z_{k+1} = z_k − α_k (p_k − 𝓜_s⁻¹ N p_k),   p_{k+1} = z_{k+1} − (z_{k+1}ᵀ A p_k / p_kᵀ A p_k) p_k,

with ``⟨x, y⟩_𝓜 = xᵀ 𝓜_s y`` (``z_k = 𝓜_s⁻¹`` of the residual).  Nothing is formed: ``N p`` is
the cross wrenches of ``p``'s body accelerations (one velocity scatter), ``𝓜_s⁻¹ Jᵀ F`` is the
step's own articulated-body solve, and the quadratic forms are sums over bodies,
``xᵀ 𝓜_s y = Σ_k V_k(x)ᵀ (M_k + B_k) V_k(y) + Σ_i d_i x_i y_i`` (``V_k(x)`` body k's twist for the
joint rates ``x``, ``M_k`` its spatial inertia, ``d`` the diagonal of the step's armature and
joint terms), and ``xᵀ N y = Σ_k V_k(x) · F_k(y)``.  Conjugate gradients minimise the ``A``-norm
of the error over the Krylov space of ``𝓜_s⁻¹ N``; the error ``A⁻¹r − θ̈₀ = (I − G)⁻¹ G θ̈₀``
(``G = 𝓜_s⁻¹ N``) lies in the range of ``N``, so ``p`` passes are exact when the slots between
moving bodies span ``p`` directions or fewer (one frictionless contact: one pass; one
frictional point: three), and otherwise the error falls at least as
``2 ((√κ − 1)/(√κ + 1))^p``, ``κ = (1 + g)/(1 − g)`` for the eigenvalues of ``G`` in ``[−g, g]``.
(A block-Jacobi iteration ``θ̈_{k+1} = θ̈₀ + G θ̈_k`` converges as ``g^p``: slowly for two bodies
accelerating together, ``g → 1``.)

Each pass costs one cross-wrench evaluation, one velocity scatter and one forward-dynamics
solve; the pass count is static (``ContactModel(coupling_passes=…)``), so the step keeps one
program shape and its derivatives, and the passes are a ``lax.scan`` (the program's size does
not grow with their count).  The divisions are guarded for a zero search direction
(no slot between moving bodies in contact): ``pᵀAp + ε²`` with ``ε²`` far below any
acceleration that matters, so a vanishing correction stays finite with finite derivatives.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import mass_parameter_levels, prepare
from sodyn.algorithms.kinematics import velocities_levels
from sodyn.model import Model
from sodyn.simulate.contact import CompliantContact, SlotCoupling
from sodyn.static_index import spread_sum, take
from sodyn.topology import dofs_to_levels, from_levels, to_levels


def _apply_k(c: SlotCoupling, x: jax.Array) -> jax.Array:
    """``K_eff x = b x + (a − b)(n·x) n`` per slot."""
    along = spatial.dot(c.normal, x)
    return spatial.scale(c.tangent_gain, x) + spatial.scale((c.normal_gain - c.tangent_gain) * along, c.normal)


def _point_acceleration(twist: jax.Array, rot: jax.Array, r: jax.Array, body: np.ndarray) -> jax.Array:
    """World acceleration ``p̈ = R (α̇ + ω̇ × r)`` of each slot's material point ``r`` on ``body``
    (static, ``−1``: the world, which does not move) for the bodies' accelerations ``twist
    (n_bodies, 6)`` (body frames, ``[ω̇; α̇]``)."""
    padded = jnp.concatenate([twist, jnp.zeros((1, 6), twist.dtype)])
    omega, lin = spatial.halves(take(padded, np.where(body < 0, twist.shape[0], body)))
    return spatial.mv(rot, lin + spatial.cross(omega, r))


def coupling_wrench(model: Model, contact: CompliantContact, coupling: SlotCoupling, twist: jax.Array) -> jax.Array:
    """Body-frame wrenches ``(n_bodies, 6)`` of the cross terms ``F₁ = K_eff p̈₂`` on body 1 and
    ``F₂ = K_eff p̈₁`` on body 2 of every slot between two moving bodies, for the bodies'
    accelerations ``twist (n_bodies, 6)`` (body frames; module docstring): ``Jᵀ F = N θ̈``."""
    body1, body2 = (np.asarray(b, np.int64) for b in contact.slot_bodies(model))
    both = np.nonzero((body1 >= 0) & (body2 >= 0))[0]
    c = SlotCoupling(*(take(x, both) for x in coupling))
    b1, b2 = body1[both], body2[both]
    wrenches = []
    for rot, r, other in ((c.rotation1, c.point1, _point_acceleration(twist, c.rotation2, c.point2, b2)),
                          (c.rotation2, c.point2, _point_acceleration(twist, c.rotation1, c.point1, b1))):
        f_b = spatial.mtv(rot, _apply_k(c, other))
        wrenches.append(jnp.concatenate([spatial.cross(r, f_b), f_b], axis=-1))
    return spread_sum(jnp.concatenate(wrenches), np.concatenate([b1, b2]), model.n_bodies)


def coupled_solve(model: Model, contact: CompliantContact, coupling: SlotCoupling | None, q: jax.Array,
                  f_ext: jax.Array, added: jax.Array, solve: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """``solve(f_ext)`` (the step's accelerations for given external wrenches, solving with
    ``𝓜_s``) followed by ``contact.coupling_passes`` conjugate-gradient passes on the coupled
    system (module docstring); one solve when the contact has no slot between two moving bodies
    or no passes.  ``model``: the model whose armature is the step's diagonal ``d``;
    ``added`` ``(n_bodies, 6, 6)``: the contact's ``B_k``."""
    a0 = a = solve(f_ext)
    passes = int(getattr(contact, "coupling_passes", 0))
    if coupling is None or passes == 0:
        return a
    topo, dtype = model.topology, q.dtype
    levels = prepare(model, q)                  # the joint transforms, once for every pass
    inertia = spatial.inertia_parameters(*mass_parameter_levels(model, dtype))
    added_l = to_levels(topo, added, jnp.zeros((6, 6), dtype))
    diagonal = model.armature.astype(dtype)
    eps2 = jnp.asarray(1e-30 if dtype == jnp.float64 else 1e-18, dtype)

    def twists(x):                              # V_k(x), slot layout (1, W, 6)
        return velocities_levels(levels, topo, dofs_to_levels(topo, x, 0.0))[0]

    def m_times(vy, y):                         # 𝓜_s y: the bodies' forces (M_k + B_k) V_k(y) and d ⊙ y
        return spatial.apply_inertia(*inertia, vy) + spatial.mv(added_l, vy), diagonal * y

    def pairing(vx, x, my):                     # xᵀ (𝓜_s y)
        return jnp.sum(vx * my[0]) + jnp.sum(x * my[1])

    def cross(vx):                              # the cross wrenches F(x), Jᵀ F = N x, body order
        return coupling_wrench(model, contact, coupling, from_levels(topo, vx))

    def n_inner(vx, wrench):                    # xᵀ N y = Σ_k V_k(x) · F_k(y)
        return jnp.sum(from_levels(topo, vx) * wrench)

    def compliance(wrench):                     # 𝓜_s⁻¹ Jᵀ F: the solve is affine in its wrenches
        return solve(f_ext + wrench) - a0

    def step_length(a, z, vz, p, vp):           # a + α p with α = zᵀ𝓜_s z / pᵀ(A − N)p
        wp, mp = cross(vp), m_times(vp, p)
        pap = pairing(vp, p, mp) - n_inner(vp, wp) + eps2
        alpha = pairing(vz, z, mp) / pap
        return a + alpha * p, alpha, wp, mp, pap

    def one_pass(carry, _):                     # a pass and the next search direction
        a, z, vz, p, vp = carry
        a, alpha, wp, mp, pap = step_length(a, z, vz, p, vp)
        y = compliance(wp)
        vy = twists(y)
        z, vz = z - alpha * (p - y), vz - alpha * (vp - vy)
        beta = (pairing(vz, z, mp) - n_inner(vz, wp)) / pap
        return (a, z, vz, z - beta * p, vz - beta * vp), None

    z = compliance(cross(twists(a)))
    vz = twists(z)
    carry = (a, z, vz, z, vz)
    if passes > 1:                              # one traced pass whatever the count
        carry, _ = jax.lax.scan(one_pass, carry, None, length=passes - 1)
    return step_length(*carry)[0]
    return a


def applied_force(model: Model, contact: CompliantContact, linear: SlotCoupling, q: jax.Array, force: jax.Array,
                  a: jax.Array) -> jax.Array:
    """The world force ``(nc, 3)`` on body 2 of each slot that the implicit step applied with
    accelerations ``a``: ``f_expl − K_eff (u⁺ − u) / dt = f_expl − K_eff (p̈₂ − p̈₁)``
    (:mod:`sodyn.simulate.contact`), ``p̈_k`` the material points' accelerations ``J_k a``;
    ``force`` is ``f_expl``, ``linear`` the slots' :class:`SlotCoupling` (all slots)."""
    body1, body2 = (np.asarray(b, np.int64) for b in contact.slot_bodies(model))
    topo = model.topology
    twist = from_levels(topo, velocities_levels(prepare(model, q), topo, dofs_to_levels(topo, a, 0.0))[0])
    du = (_point_acceleration(twist, linear.rotation2, linear.point2, body2)
          - _point_acceleration(twist, linear.rotation1, linear.point1, body1))
    return force - _apply_k(linear, du)


def slot_wrenches(model: Model, contact: CompliantContact, linear: SlotCoupling, force: jax.Array) -> jax.Array:
    """The body wrenches ``(n_bodies, 6)`` (body frame, ``[n; f]`` about the origin) of the slot
    forces ``force (nc, 3)`` (world, on body 2; body 1 takes the opposite) at the slots' contact
    points ``linear.point1``, ``point2``."""
    nb = model.n_bodies
    wrenches, targets = [], []
    sides = zip((-1.0, 1.0), contact.slot_bodies(model), (linear.rotation1, linear.rotation2),
                (linear.point1, linear.point2), strict=True)
    for sign, body, rotation, point in sides:
        body = np.asarray(body, np.int64)
        if np.all(body < 0):
            continue                           # the world's side
        f_b = sign * spatial.mtv(rotation, force)
        wrenches.append(jnp.concatenate([spatial.cross(point, f_b), f_b], axis=-1))
        targets.append(np.where(body < 0, nb, body))
    if not wrenches:
        return jnp.zeros((nb, 6), force.dtype)
    return spread_sum(jnp.concatenate(wrenches), np.concatenate(targets), nb + 1)[:nb]


__all__ = ["applied_force", "coupled_solve", "coupling_wrench", "slot_wrenches"]
