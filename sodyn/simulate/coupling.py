r"""Coupling passes of the linearly implicit step for contacts between two moving bodies.

The implicit step of :mod:`sodyn.simulate.stepping` applies, at each contact slot between
bodies 1 and 2, the force ``f_expl − K_eff (Δṗ₂ − Δṗ₁) / dt`` on body 2 (the opposite on body 1),
with ``Δṗ_k`` the change over the step of the velocity of body ``k``'s material point at the
contact (:mod:`sodyn.simulate.contact`).  One O(N) articulated-body solve can take only each
body's own term implicitly (``B_k``, a block-Jacobi splitting of ``Jᵀ K_eff J`` with
``J = J₂ − J₁``); it leaves out the cross terms

    F₂ = K_eff Δṗ₁ / dt   on body 2,        F₁ = K_eff Δṗ₂ / dt   on body 1.

Left out, two bodies that accelerate together through a contact each carry ``K_eff`` as added
inertia along the normal.  A coupling pass puts them back as external forces, with ``Δṗ_k``
from the previous solve's accelerations (``Δv = dt θ̈``, ``Δṗ_k = R_k(Δv_k + Δω_k × r_k)`` by
the velocity scatter), and solves again with the same ``B``: a block-Jacobi iteration on

    (M + Σ_k J_kᵀ B_k J_k − N) Δv = dt (τ − C + …),     N = Σ_slots (J₁ᵀ K_eff J₂ + J₂ᵀ K_eff J₁),

which converges because ``M + Σ J_kᵀ B_k J_k ± N`` are both positive definite
(``J₁ᵀKJ₁ + J₂ᵀKJ₂ ± (J₁ᵀKJ₂ + J₂ᵀKJ₁) = (J₂ ± J₁)ᵀ K (J₂ ± J₁)``): the iteration matrix
``G = (M + ΣJᵀBJ)⁻¹ N`` has its eigenvalues in ``(−1, 1)``, and after ``p`` passes the step's
velocity change is ``(I − G^{p+1})`` times the fully coupled one, in every mode (two bodies moving
together, ``G`` near ``+1``; pressed against each other, near ``−1``).  For a contact between a
body of mass ``m`` and a much heavier one, ``g ≈ κ/(m + κ)`` along the normal with
``κ = dt c + dt² k``.  Each pass costs one velocity scatter and one forward-dynamics solve; the
pass count is static (``ContactModel(coupling_passes=…)``), so the step keeps one program shape
and its derivatives.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import prepare
from sodyn.algorithms.kinematics import velocities_levels
from sodyn.model import Model
from sodyn.simulate.contact import CompliantContact, SlotCoupling
from sodyn.static_index import spread_sum, take
from sodyn.topology import dofs_to_levels, from_levels


def _apply_k(c: SlotCoupling, x: jax.Array) -> jax.Array:
    """``K_eff x = b x + (a − b)(n·x) n`` per slot."""
    along = spatial.dot(c.normal, x)
    return spatial.scale(c.tangent_gain, x) + spatial.scale((c.normal_gain - c.tangent_gain) * along, c.normal)


def coupling_wrench(model: Model, contact: CompliantContact, coupling: SlotCoupling, twist: jax.Array,
                    dt) -> jax.Array:
    """Body-frame wrenches ``(n_bodies, 6)`` of the cross terms ``F₁ = K_eff Δṗ₂/dt`` on body 1
    and ``F₂ = K_eff Δṗ₁/dt`` on body 2 of every slot between two moving bodies, for the
    bodies' velocity changes ``twist (n_bodies, 6)`` (body frames; module docstring)."""
    body1, body2 = (np.asarray(b, np.int64) for b in contact.slot_bodies(model))
    both = np.nonzero((body1 >= 0) & (body2 >= 0))[0]
    c = SlotCoupling(*(take(x, both) for x in coupling))
    b1, b2 = body1[both], body2[both]

    def point_velocity(rot, r, body):
        omega, lin = spatial.halves(take(twist, body))
        return spatial.mv(rot, lin + spatial.cross(omega, r))          # world Δṗ of the material point

    dt = jnp.asarray(dt, twist.dtype)
    wrenches = []
    for rot, r, other in ((c.rotation1, c.point1, point_velocity(c.rotation2, c.point2, b2)),
                          (c.rotation2, c.point2, point_velocity(c.rotation1, c.point1, b1))):
        f_b = spatial.mtv(rot, _apply_k(c, other)) / dt
        wrenches.append(jnp.concatenate([spatial.cross(r, f_b), f_b], axis=-1))
    return spread_sum(jnp.concatenate(wrenches), np.concatenate([b1, b2]), model.n_bodies)


def coupled_solve(model: Model, contact: CompliantContact, coupling: SlotCoupling | None, q: jax.Array,
                  f_ext: jax.Array, dt, solve: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """``solve(f_ext)`` (the step's accelerations for given external wrenches) followed by
    ``contact.coupling_passes`` coupling passes (module docstring); one solve when the contact
    has no slot between two moving bodies or no passes."""
    a = solve(f_ext)
    passes = int(getattr(contact, "coupling_passes", 0))
    if coupling is None or passes == 0:
        return a
    topo = model.topology
    levels = prepare(model, q)                  # the joint transforms, once for every pass

    def twists(dv):
        return from_levels(topo, velocities_levels(levels, topo, dofs_to_levels(topo, dv, 0.0))[0])

    for _ in range(passes):
        a = solve(f_ext + coupling_wrench(model, contact, coupling, twists(dt * a), dt))
    return a


__all__ = ["coupled_solve", "coupling_wrench"]
