r"""Rigid frictional contact on the Delassus matrix: :class:`RigidContact` and
:func:`solve_rigid_contact`.

The contact slots of a compliant contact model (:class:`~sodyn.simulate.GroundContact`: points
against a plane; :class:`~sodyn.simulate.ContactModel`: the model's geoms against each other)
become unilateral constraints with an isotropic Coulomb cone, solved at the velocity level once
per step (Stewart & Trinkle 1996; Anitescu & Potra 1997).  Slot ``i`` is between body 1 and
body 2 (either may be the world) at the world point ``p`` with normal ``n`` from body 1 to body
2 (:mod:`sodyn.simulate.contact`); its contact frame has the rows ``C = [n; t₁; t₂]`` (world
axes) and its Jacobian is

    J_i = C (R₂ S₂ J₂ − R₁ S₁ J₁),       S_s = [−r̃_s, I₃]    (r_s: p in body s's frame),

with ``J_s`` the body frame's Jacobian (Jain eq. 10.1) and ``R_s`` its world rotation (a world
side has none), so ``J_i v`` is ``[v_n; v_t₁; v_t₂]`` of body 2's material point at ``p``
relative to body 1's.

**Step.**  With ``v_free = v + dt a(q, v, τ)`` (the stepper's step without contact),

    J v⁺ = J v_free + W λ,      W = J 𝓜⁻¹ J*,      v⁺ = v_free + 𝓜⁻¹ J* λ,      q⁺ = q ⊕ dt v⁺,

and the impulses ``λ_i = [λ_n; λ_t]`` satisfy, per point, Signorini's condition and Coulomb's
law with maximal dissipation (the nonlinear complementarity problem, not its convex
relaxation: a sliding contact does not lift off):

    0 ≤ λ_n ⟂ v_n⁺ − b ≥ 0,        |λ_t| ≤ μ λ_n,        λ_t = −μ λ_n v_t⁺ / |v_t⁺|  when v_t⁺ ≠ 0.

The normal target ``b`` holds the gap, Newton's restitution law of Alexiou's impulse note
(eq. 22: ``v_bounce = −ε v_imp``, with the approach speed ``v_imp = max(−v_n, 0)`` of ``J v``
at the start of the step) and a Baumgarte-style penetration recovery, with the signed
distance ``φ = d − d₀`` at the start of the step (``d₀`` the contact model's rest distance)
and ``v_n^free`` the normal velocity of ``J v_free``:

    b = max(ε v_imp, β max(−φ, 0) / dt)     if φ ≤ 0 (touching or penetrating),
    b = ε v_imp                              if φ > 0, φ + dt v_n^free < 0 and ε v_imp > 0,
    b = −φ / dt                              otherwise (φ > 0).

A slot apart may close by ``φ`` in the step (speculative contact: with ``ε = 0`` its
surfaces meet exactly at the end of the step); a penetrating one is pushed out at the rate
``β |φ| / dt``.  A slot that would close within the step
(``φ + dt v_n^free < 0``) with ``ε v_imp > 0`` leaves at ``ε v_imp``, wherever in the step the
impact falls: restitution acts on the velocity (its position is then off by at most
``(1 + ε) φ < (1 + ε) v_imp dt``), as in Box2D's restitution pass.  A speculative target
``ε v_imp − φ / dt`` instead would lose up to all of the rebound speed, depending on where in
the step the surfaces meet.  Slots farther apart than ``margin``
(``φ ≥ margin``) are masked out of the solve (their impulse is exactly zero; the mask is a
comparison, so it has no gradient and no NaN).

**Delassus matrix** from the Ω recursions: the body frames of the contact bodies are 6D tasks,
``Λ⁻¹ = J_B 𝓜⁻¹ J_B*`` comes from :func:`sodyn.operational_space_compliance`'s sweeps (Jain
eqs. 10.13–10.18; Υ scatter, Ψ gather, nearest common ancestors), and with the sides'
``A_i^s = ±C R_s S_s`` (``+`` for body 2)

    W_ij = Σ_{s, s'} A_i^s Λ⁻¹(k_i^s, k_j^s') A_j^s'*,         𝓜⁻¹ J* λ = 𝓜⁻¹ (J_B* Σ_i Σ_s A_i^s* λ_i),

the last by one innovations solve (:func:`sodyn.inverse_mass_matrix_times`, Jain Lemma 7.5)
with the one right-hand side ``J* λ``.  ``𝓜`` is never formed or factored.

**Solver:** projected Gauss–Seidel over the slots, a fixed number of sweeps (``iterations``,
static: no ``while_loop``, so ``jax.grad`` differentiates through them; each sweep is a
``lax.scan`` over the slots, so the program does not grow with their number).  Each
slot's update, with ``r = W_i: λ + J_i v_free − [b; 0; 0]`` its current velocity residual:

1. the exact block step ``λ_i − W_ii⁻¹ r``, kept when it lies inside the cone (sticking);
2. otherwise the staggered step: ``λ_n ← max(0, λ_n − r_n / W_nn)``, then the tangential
   residual is updated and ``λ_t ← Π_{|λ_t| ≤ μλ_n}(λ_t − r_t / L_t)`` with ``L_t`` the
   Gershgorin bound of the tangential 2×2 block (the exact projection onto the disc).

A fixed point of step 2 satisfies Signorini's condition and the maximal-dissipation law
above, i.e. the true (not pyramidal) cone of the NCP.  The projection divides only where
``|λ_t| > μ λ_n ≥ 0``, so values and gradients stay finite.

**Not modelled** (besides those of :mod:`~sodyn.simulate.contact`): warm starting (each step
starts from ``λ = 0``), rolling and torsional friction.  The regularized contact of
:mod:`~sodyn.simulate.contact` remains the default model.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import check_vector
from sodyn.algorithms.frame_jacobians import frame_jacobians
from sodyn.algorithms.inverse_mass_matrix import inverse_mass_matrix_times
from sodyn.algorithms.operational_space_sweeps import compliance_from_sweeps, task_sweeps
from sodyn.algorithms.tasks import FrameTask, resolve_tasks, tasks_share_their_body
from sodyn.configuration import integrate
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.simulate.contact import CompliantContact, body_frames, check_slot_bodies, concrete_array
from sodyn.simulate.state import State
from sodyn.static_index import take

#: Default number of Gauss–Seidel sweeps.
ITERATIONS = 50
#: Default Baumgarte factor ``β`` (fraction of a penetration removed per step).
BAUMGARTE = 0.2
#: Default activation distance, m.
MARGIN = 1e-2


class RigidContact(eqx.Module):
    r"""Rigid contact on the slots of a compliant contact model (module docstring): pass it as
    ``contact=`` to :func:`~sodyn.simulate.step` or :func:`~sodyn.simulate.rollout`.  Only the
    contact model's geometry, rest distance and ``friction`` ``μ`` are used (not its stiffness,
    damping, slip velocity or onset).

    **Arguments:** ``contact`` (a :class:`~sodyn.simulate.GroundContact` or
    :class:`~sodyn.simulate.ContactModel`); ``iterations`` (static, ≥ 1): Gauss–Seidel sweeps
    per step; ``restitution`` ``ε ∈ [0, 1]`` (``()`` or ``(nc,)``); ``baumgarte`` ``β ∈ [0, 1]``;
    ``margin`` (m, ≥ 0): slots farther apart are inactive.

    **Raises** ``ValueError`` naming the argument (values checked when known, i.e. not under
    ``jit``/``vmap``).
    """

    contact: CompliantContact
    restitution: jax.Array
    baumgarte: jax.Array
    margin: jax.Array
    iterations: int = eqx.field(static=True)

    def __init__(self, contact: CompliantContact, *, iterations: int = ITERATIONS, restitution=0.0,
                 baumgarte=BAUMGARTE, margin=MARGIN):
        if not isinstance(contact, CompliantContact):
            raise ValueError(f"RigidContact: contact must be a GroundContact or a ContactModel, got "
                             f"{type(contact).__name__}")
        if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) or iterations < 1:
            raise ValueError(f"RigidContact: iterations must be a positive integer, got {iterations!r}")
        self.contact = contact
        self.iterations = int(iterations)
        dtype = contact.friction.dtype
        self.restitution, self.baumgarte, self.margin = (
            x if isinstance(x, jax.core.Tracer) else jnp.asarray(x, dtype) for x in (restitution, baumgarte, margin))

    def __check_init__(self):
        nc = len(self.contact)
        if self.restitution.shape not in ((), (nc,)):
            raise ValueError(f"RigidContact: restitution must be a scalar or have shape ({nc},), "
                             f"got {self.restitution.shape}")
        for name in ("baumgarte", "margin"):
            if getattr(self, name).shape != ():
                raise ValueError(f"RigidContact: {name} must be a scalar, got shape {getattr(self, name).shape}")
        for name, lo, hi in (("restitution", 0.0, 1.0), ("baumgarte", 0.0, 1.0), ("margin", 0.0, np.inf)):
            x = concrete_array(getattr(self, name))
            if x is not None and (np.any(~np.isfinite(x)) or np.any(x < lo) or np.any(x > hi)):
                raise ValueError(f"RigidContact: {name} must be finite and in [{lo:g}, {hi:g}], got {x.tolist()}")

    def __len__(self) -> int:
        return len(self.contact)


class RigidContactSolution(NamedTuple):
    """What :func:`solve_rigid_contact` returns (``nc`` slots, rows ``[n, t₁, t₂]``).

    ``impulse (nc, 3)``: ``λ`` in each contact frame; ``force (nc, 3)``: the mean world-frame
    force on body 2 over the step, ``Cᵀ λ / dt``; ``v_plus (nv,)``; ``velocity (nc, 3)``:
    ``J v⁺`` in the contact frames; ``distance (nc,)``: ``φ`` at the start of the step;
    ``active (nc,)``: ``φ < margin``; ``delassus (3nc, 3nc)``: ``W``."""

    impulse: jax.Array
    force: jax.Array
    v_plus: jax.Array
    velocity: jax.Array
    distance: jax.Array
    active: jax.Array
    delassus: jax.Array


def contact_frame(normal: jax.Array) -> jax.Array:
    """``C = [n; t₁; t₂]`` ``(3, 3)``: rows an orthonormal right-handed frame with ``t₁ × t₂ = n``
    (``t₁ = n × a / |n × a|`` with ``a`` the axis least aligned with ``n``)."""
    n = jnp.asarray(normal)
    k = jnp.argmin(jnp.abs(n))
    a = jnp.where(jnp.arange(3) == k, 1.0, 0.0).astype(n.dtype)
    t1 = spatial.cross(n, a)
    t1 = t1 / jnp.sqrt(spatial.dot(t1, t1))  # |n × a|² ≥ 2/3 for a unit n
    t2 = spatial.cross(n, t1)
    return jnp.stack([n, t1, t2])


def _task_bodies(model: Model, contact: CompliantContact) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """The distinct contact bodies (static, the world left out), and each slot's ``(nc, 2)``
    bodies and their indices among them (``−1`` for the world)."""
    body1, body2 = (np.asarray(b, np.int64) for b in contact.slot_bodies(model))
    check_slot_bodies(model, body1, body2)
    sides = np.stack([body1, body2], axis=-1)
    bodies = tuple(sorted(set(sides[sides >= 0].tolist())))
    lookup = {b: i for i, b in enumerate(bodies)}
    return bodies, sides, np.vectorize(lambda b: lookup.get(int(b), -1), otypes=[np.int64])(sides)


def _body_tasks(model: Model, bodies) -> list[FrameTask]:
    return [FrameTask(model.frame_names.index(model.body_names[k]), "local") for k in bodies]


class _Slots(NamedTuple):
    """Slot kinematics at ``q``: ``maps (nc, 2, 3, 6)`` the ``±C R_k S`` of each side (zero for
    the world), ``frame (nc, 3, 3)`` the contact frames ``C``, ``distance (nc,)`` ``φ``,
    ``friction (nc,)``, and per velocity asked for, the slots' ``J v`` ``(nc, 3)``."""

    maps: jax.Array
    frame: jax.Array
    distance: jax.Array
    friction: jax.Array
    velocities: list


def _slots(model: Model, contact: CompliantContact, sides: np.ndarray, q, velocities) -> _Slots:
    """``A_i = C_i (R₂ S₂ ⊕ −R₁ S₁)`` and ``φ_i = d_i − d₀`` of every slot (module docstring)."""
    dtype = q.dtype
    nb = model.n_bodies
    rot, origin, _ = body_frames(model, q, jnp.zeros(model.nv, dtype))
    c = contact.contacts(model, rot, origin)
    law = contact.law(dtype)
    frame = jax.vmap(contact_frame)(c.normal)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), frame.shape)
    world = (sides < 0)[:, :, None, None]
    maps = []
    for s, sign in ((0, -1.0), (1, 1.0)):
        idx = np.where(sides[:, s] < 0, nb, sides[:, s])
        r_s = take(jnp.concatenate([rot, jnp.eye(3, dtype=dtype)[None]]), idx)
        o_s = take(jnp.concatenate([origin, jnp.zeros((1, 3), dtype)]), idx)
        r = spatial.mtv(r_s, c.position - o_s)
        maps.append(sign * spatial.mm(spatial.mm(frame, r_s), jnp.concatenate([-spatial.skew(r), eye], axis=-1)))
    maps = jnp.where(world, 0.0, jnp.stack(maps, axis=1))
    twists = []
    for w in velocities:
        _, _, tw = body_frames(model, q, w)
        tw = jnp.concatenate([tw, jnp.zeros((1, 6), dtype)])
        twists.append(sum(spatial.mv(maps[:, s], take(tw, np.where(sides[:, s] < 0, nb, sides[:, s])))
                          for s in (0, 1)))
    distance = c.distance - jnp.asarray(law.rest, dtype)
    return _Slots(maps, frame, distance, jnp.broadcast_to(law.friction, distance.shape), twists)


def _spread(maps: jax.Array, index: np.ndarray, n_bodies: int) -> jax.Array:
    """``A`` ``(3nc, 6U)``: each slot's two ``A`` blocks in the columns of their bodies (static
    placement; a world side has none)."""
    onehot = [np.asarray(index[:, s, None] == np.arange(n_bodies)[None], maps.dtype) for s in (0, 1)]
    a = sum(jnp.einsum("iu,iab->iaub", onehot[s], maps[:, s]) for s in (0, 1))
    return a.reshape(3 * maps.shape[0], 6 * n_bodies)


@full_precision
def delassus_matrix(model: Model, contact: CompliantContact, q) -> jax.Array:
    """``W = J 𝓜⁻¹ J*`` ``(3nc, 3nc)`` of the contact slots (rows ``[n, t₁, t₂]`` per slot)
    by the Ω recursions (module docstring), whether or not they touch."""
    q = check_vector(model, q, model.nq, "q")
    bodies, sides, index = _task_bodies(model, contact)
    tasks = resolve_tasks(model, _body_tasks(model, bodies))
    sw = task_sweeps(model, q, tasks, with_psi=not tasks_share_their_body(model, tasks))
    a = _spread(_slots(model, contact, sides, q, []).maps, index, len(bodies))
    return _symmetric(a @ compliance_from_sweeps(model, tasks, sw) @ a.T)


@full_precision
def contact_jacobian(model: Model, contact: CompliantContact, q) -> jax.Array:
    """``J`` ``(3nc, nv)``: rows ``[n, t₁, t₂]`` (world axes) of each slot's relative material
    velocity (body 2's point minus body 1's), from the body frames' Jacobians
    (:func:`sodyn.frame_jacobians`)."""
    q = check_vector(model, q, model.nq, "q")
    bodies, sides, index = _task_bodies(model, contact)
    jb = frame_jacobians(model, q, [model.body_names[k] for k in bodies], "local")   # (U, 6, nv)
    return _spread(_slots(model, contact, sides, q, []).maps, index, len(bodies)) @ jb.reshape((-1, model.nv))


def _symmetric(w: jax.Array) -> jax.Array:
    return 0.5 * (w + w.T)


def _project_disc(x: jax.Array, radius: jax.Array) -> jax.Array:
    """The Euclidean projection of ``x (2,)`` onto ``{|x| ≤ radius}``, ``radius ≥ 0`` (NaN-free)."""
    norm = spatial.safe_norm(x)
    outside = norm > radius
    return x * jnp.where(outside, radius / jnp.where(outside, norm, 1.0), 1.0)


def gauss_seidel(w: jax.Array, g: jax.Array, friction: jax.Array, active: jax.Array, iterations: int) -> jax.Array:
    """``iterations`` projected Gauss–Seidel sweeps (module docstring) for the cone
    complementarity problem ``u = W λ + g``: ``0 ≤ λ_n ⟂ u_n ≥ 0``, ``|λ_t| ≤ μ λ_n`` with
    maximal dissipation, from ``λ = 0``.  ``w (3nc, 3nc)``, ``g (nc, 3)``, ``friction (nc,)``,
    ``active (nc,)`` bool (inactive slots keep ``λ_i = 0``).  Returns ``λ (nc, 3)``."""
    nc = g.shape[0]
    dtype = w.dtype
    blocks = jnp.stack([w[3 * i:3 * i + 3, 3 * i:3 * i + 3] for i in range(nc)])        # W_ii
    block_inv = spatial.spd_inverse(blocks + jnp.where(active, 0.0, 1.0)[:, None, None] * jnp.eye(3, dtype=dtype))
    w_nn = blocks[:, 0, 0]
    inv_n = jnp.where(w_nn > 0, 1.0 / jnp.where(w_nn > 0, w_nn, 1.0), 0.0)
    l_t = jnp.maximum(blocks[:, 1, 1], blocks[:, 2, 2]) + jnp.abs(blocks[:, 1, 2])   # Gershgorin ≥ λ_max(W_tt)
    inv_t = jnp.where(l_t > 0, 1.0 / jnp.where(l_t > 0, l_t, 1.0), 0.0)
    per_slot = (w.reshape(nc, 3, 3 * nc), g, block_inv, inv_n, inv_t, friction, active, blocks[:, 1:, 0],
                3 * jnp.arange(nc))

    def update(lam, slot):
        row, g_i, b_inv, i_n, i_t, mu, on, col, start = slot
        lam_i = jax.lax.dynamic_slice(lam, (start,), (3,))
        r = jnp.sum(row * lam[None], axis=-1) + g_i
        block = lam_i - spatial.mv(b_inv, r)
        sticking = (block[0] >= 0) & (spatial.safe_norm(block[1:]) <= mu * block[0])
        lam_n = jnp.maximum(lam_i[0] - r[0] * i_n, 0.0)
        lam_t = _project_disc(lam_i[1:] - (r[1:] + col * (lam_n - lam_i[0])) * i_t, mu * lam_n)
        new = jnp.where(sticking, block, jnp.concatenate([lam_n[None], lam_t]))
        return jax.lax.dynamic_update_slice(lam, jnp.where(on, new, 0.0), (start,)), None

    def sweep(lam, _):
        return jax.lax.scan(update, lam, per_slot)[0], None

    lam, _ = jax.lax.scan(sweep, jnp.zeros(3 * nc, dtype), None, length=iterations)
    return lam.reshape(nc, 3)


def normal_target(phi, u_n, u_free_n, restitution, baumgarte, dt) -> jax.Array:
    """The normal velocity target ``b`` of each slot (module docstring) from its distance
    ``φ``, the normal velocities ``u_n`` of ``J v`` and ``u_free_n`` of ``J v_free``, the
    restitution ``ε``, the Baumgarte factor ``β`` and the step ``dt``."""
    bounce = restitution * jnp.maximum(-u_n, 0.0)                      # ε v_imp
    touching = jnp.maximum(bounce, baumgarte * jnp.maximum(-phi, 0.0) / dt)
    impact = (phi + dt * u_free_n < 0.0) & (bounce > 0.0)              # closes within the step
    return jnp.where(phi <= 0.0, touching, jnp.where(impact, bounce, -phi / dt))


@full_precision
def solve_rigid_contact(model: Model, contact: RigidContact, q, v, v_free, dt) -> RigidContactSolution:
    """The contact impulses of one step and ``v⁺`` (module docstring): ``v`` the velocity at
    the start of the step (for restitution), ``v_free`` the velocity the step reaches without
    contact, ``dt`` the step.  Returns a :class:`RigidContactSolution`."""
    if not isinstance(contact, RigidContact):
        raise ValueError(f"contact must be a RigidContact, got {type(contact).__name__}")
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    v_free = check_vector(model, v_free, model.nv, "v_free", q.dtype)
    dtype = q.dtype
    dt = jnp.asarray(dt, dtype)
    bodies, sides, index = _task_bodies(model, contact.contact)
    tasks = resolve_tasks(model, _body_tasks(model, bodies))
    sw = task_sweeps(model, q, tasks, with_psi=not tasks_share_their_body(model, tasks))
    comp = compliance_from_sweeps(model, tasks, sw)                     # Λ⁻¹ of the body frames
    sl = _slots(model, contact.contact, sides, q, [v, v_free])
    u0, u_free = sl.velocities                                               # J v, J v_free per slot
    a = _spread(sl.maps, index, len(bodies))
    w = _symmetric(a @ comp @ a.T)

    phi = sl.distance
    eps = jnp.broadcast_to(contact.restitution.astype(dtype), phi.shape)
    beta = contact.baumgarte.astype(dtype)
    bias = normal_target(phi, u0[:, 0], u_free[:, 0], eps, beta, dt)
    active = phi < contact.margin.astype(dtype)
    g = u_free - jnp.concatenate([bias[:, None], jnp.zeros((len(phi), 2), dtype)], axis=-1)
    lam = gauss_seidel(w, g, sl.friction, active, contact.iterations)

    jac_b = frame_jacobians(model, q, [model.body_names[k] for k in bodies], "local").reshape((-1, model.nv))
    v_plus = v_free + inverse_mass_matrix_times(model, q, jac_b.T @ (a.T @ lam.reshape(-1)))
    force = jnp.einsum("ia,iab->ib", lam, sl.frame) / dt
    velocity = u_free + (w @ lam.reshape(-1)).reshape(lam.shape)
    return RigidContactSolution(lam, force, v_plus, velocity, phi, active, w)


def rigid_contact_step(model: Model, contact: RigidContact, state: State, v_free, dt) -> tuple[State, jax.Array]:
    """``(State(q ⊕ dt v⁺, v⁺, t + dt), force (nc, 3))`` from the start ``state`` and the
    contact-free ``v_free`` of a step of ``dt`` (the stepper's contact hook)."""
    sol = solve_rigid_contact(model, contact, state.q, state.v, v_free, dt)
    return State(integrate(model, state.q, sol.v_plus, dt), sol.v_plus, state.t + dt), sol.force


__all__ = ["RigidContact", "RigidContactSolution", "contact_frame", "contact_jacobian", "delassus_matrix",
           "gauss_seidel", "normal_target", "rigid_contact_step", "solve_rigid_contact"]
