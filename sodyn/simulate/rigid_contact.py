r"""Rigid frictional contact on the Delassus matrix: :class:`RigidContact` and
:func:`solve_rigid_contact`.

The contact points of a :class:`~sodyn.simulate.GroundContact` (spheres of radius ``r`` on
bodies, one plane ``{x : n·x = h}``) become unilateral constraints with an isotropic Coulomb
cone, solved at the velocity level once per step (Stewart & Trinkle 1996; Anitescu & Potra
1997).  Each point ``i`` on body ``k`` touches at ``p_c = p − r n``; its contact frame has
the rows ``C = [n; t₁; t₂]`` (world axes) and its Jacobian is

    J_i = C R_k S_i J_k,       S_i = [−r̃_c, I₃]    (r_c: the contact point in body k's frame),

with ``J_k`` the body frame's Jacobian (Jain eq. 10.1) and ``R_k`` its world rotation, so
``J_i v`` is ``[v_n; v_t₁; v_t₂]`` of the body's material point at ``p_c``.

**Step.**  With ``v_free = v + dt a(q, v, τ)`` (the stepper's step without contact),

    J v⁺ = J v_free + W λ,      W = J 𝓜⁻¹ J*,      v⁺ = v_free + 𝓜⁻¹ J* λ,      q⁺ = q ⊕ dt v⁺,

and the impulses ``λ_i = [λ_n; λ_t]`` satisfy, per point, Signorini's condition and Coulomb's
law with maximal dissipation (the nonlinear complementarity problem, not its convex
relaxation: a sliding contact does not lift off):

    0 ≤ λ_n ⟂ v_n⁺ − b ≥ 0,        |λ_t| ≤ μ λ_n,        λ_t = −μ λ_n v_t⁺ / |v_t⁺|  when v_t⁺ ≠ 0.

The normal target ``b`` holds the gap, Newton's restitution law of Alexiou's impulse note
(eq. 22: ``v_bounce = −ε v_imp``, with the approach speed ``v_imp = max(−v_n, 0)`` of ``J v``
at the start of the step) and a Baumgarte-style penetration recovery, with the signed
distance ``φ = n·p_c − h`` at the start of the step and ``v_n^free`` the normal velocity of
``J v_free``:

    b = max(ε v_imp, β max(−φ, 0) / dt)     if φ ≤ 0 (touching or penetrating),
    b = ε v_imp                              if φ > 0, φ + dt v_n^free < 0 and ε v_imp > 0,
    b = −φ / dt                              otherwise (φ > 0).

A point above the plane may approach it by ``φ`` in the step (speculative contact: with
``ε = 0`` it lands exactly on the plane at the end of the step); a penetrating one is pushed
out at the rate ``β |φ| / dt``.  A point that would reach the plane within the step
(``φ + dt v_n^free < 0``) with ``ε v_imp > 0`` leaves at ``ε v_imp``, wherever in the step the
impact falls: restitution acts on the velocity (its position is then off by at most
``(1 + ε) φ < (1 + ε) v_imp dt``), as in Box2D's restitution pass.  A speculative target
``ε v_imp − φ / dt`` instead would lose up to all of the rebound speed, depending on where in
the step the point meets the plane.  Points farther than ``margin`` from the plane
(``φ ≥ margin``) are masked out of the solve (their impulse is exactly zero; the mask is a
comparison, so it has no gradient and no NaN).

**Delassus matrix** from the Ω recursions: the body frames of the contact bodies are 6D tasks,
``Λ⁻¹ = J_B 𝓜⁻¹ J_B*`` comes from :func:`sodyn.operational_space_compliance`'s sweeps (Jain
eqs. 10.13–10.18; Υ scatter, Ψ gather, nearest common ancestors), and with ``A_i = C R_k S_i``

    W_ij = A_i Λ⁻¹(k_i, k_j) A_j*,         𝓜⁻¹ J* λ = 𝓜⁻¹ (J_B* Σ_i A_i* λ_i),

the last by one innovations solve (:func:`sodyn.inverse_mass_matrix_times`, Jain Lemma 7.5)
with the one right-hand side ``J* λ``.  ``𝓜`` is never formed or factored.

**Solver:** projected Gauss–Seidel over the points, a fixed number of sweeps (``iterations``,
static: no ``while_loop``, so ``jax.grad`` differentiates through the unrolled sweeps).  Each
point's update, with ``r = W_i: λ + J_i v_free − [b; 0; 0]`` its current velocity residual:

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
from sodyn.algorithms import operational_space as osm
from sodyn.algorithms.articulated import inverse_mass_matrix_times
from sodyn.algorithms.common import check_vector
from sodyn.algorithms.kinematics import frame_jacobians
from sodyn.configuration import integrate
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.simulate.contact import GroundContact, body_states, check_bodies, concrete_array
from sodyn.simulate.state import State
from sodyn.static_index import take

#: Default number of Gauss–Seidel sweeps.
ITERATIONS = 50
#: Default Baumgarte factor ``β`` (fraction of a penetration removed per step).
BAUMGARTE = 0.2
#: Default activation distance, m.
MARGIN = 1e-2


class RigidContact(eqx.Module):
    r"""Rigid contact on the points of a :class:`~sodyn.simulate.GroundContact` (module
    docstring): pass it as ``contact=`` to :func:`~sodyn.simulate.step` or
    :func:`~sodyn.simulate.rollout`.  Only the ground's geometry and ``friction`` ``μ`` are
    used (not its stiffness, damping, slip velocity or onset).

    **Arguments:** ``ground``; ``iterations`` (static, ≥ 1): Gauss–Seidel sweeps per step;
    ``restitution`` ``ε ∈ [0, 1]`` (``()`` or ``(nc,)``); ``baumgarte`` ``β ∈ [0, 1]``;
    ``margin`` (m, ≥ 0): points farther from the plane are inactive.

    **Raises** ``ValueError`` naming the argument (values checked when known, i.e. not under
    ``jit``/``vmap``).
    """

    ground: GroundContact
    restitution: jax.Array
    baumgarte: jax.Array
    margin: jax.Array
    iterations: int = eqx.field(static=True)

    def __init__(self, ground: GroundContact, *, iterations: int = ITERATIONS, restitution=0.0,
                 baumgarte=BAUMGARTE, margin=MARGIN):
        if not isinstance(ground, GroundContact):
            raise ValueError(f"RigidContact: ground must be a GroundContact, got {type(ground).__name__}")
        if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) or iterations < 1:
            raise ValueError(f"RigidContact: iterations must be a positive integer, got {iterations!r}")
        self.ground = ground
        self.iterations = int(iterations)
        dtype = ground.position.dtype
        self.restitution, self.baumgarte, self.margin = (
            x if isinstance(x, jax.core.Tracer) else jnp.asarray(x, dtype) for x in (restitution, baumgarte, margin))

    def __check_init__(self):
        nc = len(self.ground)
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
        return len(self.ground)


class RigidContactSolution(NamedTuple):
    """What :func:`solve_rigid_contact` returns (``nc`` points, rows ``[n, t₁, t₂]``).

    ``impulse (nc, 3)``: ``λ`` in each contact frame; ``force (nc, 3)``: the mean world-frame
    force on the robot over the step, ``Cᵀ λ / dt``; ``v_plus (nv,)``; ``velocity (nc, 3)``:
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


def _task_bodies(model: Model, ground: GroundContact) -> tuple[tuple[int, ...], np.ndarray]:
    """The distinct contact bodies (static) and each point's index among them."""
    body = check_bodies(model, ground)
    bodies = tuple(sorted(set(body.tolist())))
    return bodies, np.array([bodies.index(b) for b in body], dtype=np.int64)


def _body_tasks(model: Model, bodies) -> list[osm.FrameTask]:
    return [osm.FrameTask(model.frame_names.index(model.body_names[k]), "local") for k in bodies]


class _Points(NamedTuple):
    """Point kinematics at ``q``: ``maps (nc, 3, 6)`` the ``A_i = C R_k S_i``; ``distance (nc,)``."""

    maps: jax.Array
    distance: jax.Array


def _points(model: Model, ground: GroundContact, rot: jax.Array, origin: jax.Array) -> _Points:
    """``A_i`` and ``φ`` from the bodies' world rotations ``(nc, 3, 3)`` and origins ``(nc, 3)``."""
    dtype = rot.dtype
    n, h = ground.normal.astype(dtype), ground.height.astype(dtype)
    frame = contact_frame(n)
    n_b = spatial.mtv(rot, jnp.broadcast_to(n, origin.shape))
    r_c = ground.position.astype(dtype) - spatial.scale(ground.radius.astype(dtype), n_b)
    distance = spatial.dot(n, origin + spatial.mv(rot, r_c)) - h
    eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), rot.shape)
    s = jnp.concatenate([-spatial.skew(r_c), eye], axis=-1)          # S_i = [−r̃_c, I]
    maps = spatial.mm(spatial.mm(jnp.broadcast_to(frame, rot.shape), rot), s)
    return _Points(maps, distance)


def _kinematics(model: Model, ground: GroundContact, q, velocities):
    """Per point ``_Points`` and the body twists of each velocity in ``velocities``."""
    body = np.asarray(ground.body, np.int64)
    slots = np.asarray(model.topology.body_flat)[body]
    width = model.topology.width
    twists = []
    for w in velocities:
        wr, wp, vel = body_states(model, q, w)
        rot, origin, twist = (take(x.reshape((width,) + x.shape[2:]), slots) for x in (wr, wp, vel))
        twists.append(twist)
    return _points(model, ground, rot, origin), twists


def _spread(maps: jax.Array, index: np.ndarray, n_bodies: int) -> jax.Array:
    """``A`` ``(3nc, 6U)``: each point's ``A_i`` in the columns of its body (static placement)."""
    zero = jnp.zeros((3, 6), maps.dtype)
    rows = [jnp.concatenate([maps[i] if index[i] == u else zero for u in range(n_bodies)], axis=-1)
            for i in range(len(index))]
    return jnp.concatenate(rows, axis=0)


@full_precision
def delassus_matrix(model: Model, ground: GroundContact, q) -> jax.Array:
    """``W = J 𝓜⁻¹ J*`` ``(3nc, 3nc)`` of the contact points (rows ``[n, t₁, t₂]`` per point)
    by the Ω recursions (module docstring), whether or not the points touch."""
    q = check_vector(model, q, model.nq, "q")
    bodies, index = _task_bodies(model, ground)
    tasks = osm.resolve_tasks(model, _body_tasks(model, bodies))
    sw = osm.task_sweeps(model, q, tasks, with_psi=not osm.tasks_share_their_body(model, tasks))
    pts, _ = _kinematics(model, ground, q, [jnp.zeros(model.nv, q.dtype)])
    a = _spread(pts.maps, index, len(bodies))
    return _symmetric(a @ osm.compliance_from_sweeps(model, tasks, sw) @ a.T)


@full_precision
def contact_jacobian(model: Model, ground: GroundContact, q) -> jax.Array:
    """``J`` ``(3nc, nv)``: rows ``[n, t₁, t₂]`` (world axes) of each point's material velocity,
    from the body frames' Jacobians (:func:`sodyn.frame_jacobians`)."""
    q = check_vector(model, q, model.nq, "q")
    bodies, index = _task_bodies(model, ground)
    jb = frame_jacobians(model, q, [model.body_names[k] for k in bodies], "local")   # (U, 6, nv)
    pts, _ = _kinematics(model, ground, q, [jnp.zeros(model.nv, q.dtype)])
    return _spread(pts.maps, index, len(bodies)) @ jb.reshape((-1, model.nv))


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
    ``active (nc,)`` bool (inactive points keep ``λ_i = 0``).  Returns ``λ (nc, 3)``."""
    nc = g.shape[0]
    dtype = w.dtype
    blocks = jnp.stack([w[3 * i:3 * i + 3, 3 * i:3 * i + 3] for i in range(nc)])        # W_ii
    block_inv = spatial.spd_inverse(blocks + jnp.where(active, 0.0, 1.0)[:, None, None] * jnp.eye(3, dtype=dtype))
    w_nn = blocks[:, 0, 0]
    inv_n = jnp.where(w_nn > 0, 1.0 / jnp.where(w_nn > 0, w_nn, 1.0), 0.0)
    l_t = jnp.maximum(blocks[:, 1, 1], blocks[:, 2, 2]) + jnp.abs(blocks[:, 1, 2])   # Gershgorin ≥ λ_max(W_tt)
    inv_t = jnp.where(l_t > 0, 1.0 / jnp.where(l_t > 0, l_t, 1.0), 0.0)
    rows = [w[3 * i:3 * i + 3] for i in range(nc)]
    g_flat = g.reshape(-1)

    def sweep(lam, _):
        for i in range(nc):
            lam_i = lam[3 * i:3 * i + 3]
            r = jnp.sum(rows[i] * lam[None], axis=-1) + g_flat[3 * i:3 * i + 3]
            block = lam_i - spatial.mv(block_inv[i], r)
            sticking = (block[0] >= 0) & (spatial.safe_norm(block[1:]) <= friction[i] * block[0])
            lam_n = jnp.maximum(lam_i[0] - r[0] * inv_n[i], 0.0)
            r_t = r[1:] + rows[i][1:, 3 * i] * (lam_n - lam_i[0])
            lam_t = _project_disc(lam_i[1:] - r_t * inv_t[i], friction[i] * lam_n)
            new = jnp.where(sticking, block, jnp.concatenate([lam_n[None], lam_t]))
            lam = jax.lax.dynamic_update_slice(lam, jnp.where(active[i], new, 0.0), (3 * i,))
        return lam, None

    lam, _ = jax.lax.scan(sweep, jnp.zeros(3 * nc, dtype), None, length=iterations)
    return lam.reshape(nc, 3)


def normal_target(phi, u_n, u_free_n, restitution, baumgarte, dt) -> jax.Array:
    """The normal velocity target ``b`` of each point (module docstring) from its distance
    ``φ``, the normal velocities ``u_n`` of ``J v`` and ``u_free_n`` of ``J v_free``, the
    restitution ``ε``, the Baumgarte factor ``β`` and the step ``dt``."""
    bounce = restitution * jnp.maximum(-u_n, 0.0)                      # ε v_imp
    touching = jnp.maximum(bounce, baumgarte * jnp.maximum(-phi, 0.0) / dt)
    impact = (phi + dt * u_free_n < 0.0) & (bounce > 0.0)              # meets the plane within the step
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
    ground = contact.ground
    bodies, index = _task_bodies(model, ground)
    tasks = osm.resolve_tasks(model, _body_tasks(model, bodies))
    sw = osm.task_sweeps(model, q, tasks, with_psi=not osm.tasks_share_their_body(model, tasks))
    comp = osm.compliance_from_sweeps(model, tasks, sw)                     # Λ⁻¹ of the body frames
    pts, (twist, twist_free) = _kinematics(model, ground, q, [v, v_free])
    a = _spread(pts.maps, index, len(bodies))
    w = _symmetric(a @ comp @ a.T)
    u0, u_free = spatial.mv(pts.maps, twist), spatial.mv(pts.maps, twist_free)   # J v, J v_free per point

    phi = pts.distance
    eps = jnp.broadcast_to(contact.restitution.astype(dtype), phi.shape)
    beta = contact.baumgarte.astype(dtype)
    bias = normal_target(phi, u0[:, 0], u_free[:, 0], eps, beta, dt)
    active = phi < contact.margin.astype(dtype)
    mu = jnp.broadcast_to(ground.friction.astype(dtype), phi.shape)
    g = u_free - jnp.concatenate([bias[:, None], jnp.zeros((len(phi), 2), dtype)], axis=-1)
    lam = gauss_seidel(w, g, mu, active, contact.iterations)

    jac_b = frame_jacobians(model, q, [model.body_names[k] for k in bodies], "local").reshape((-1, model.nv))
    v_plus = v_free + inverse_mass_matrix_times(model, q, jac_b.T @ (a.T @ lam.reshape(-1)))
    frame = contact_frame(ground.normal.astype(dtype))
    force = lam @ frame / dt
    velocity = u_free + (w @ lam.reshape(-1)).reshape(lam.shape)
    return RigidContactSolution(lam, force, v_plus, velocity, phi, active, w)


def rigid_contact_step(model: Model, contact: RigidContact, state: State, v_free, dt) -> tuple[State, jax.Array]:
    """``(State(q ⊕ dt v⁺, v⁺, t + dt), force (nc, 3))`` from the start ``state`` and the
    contact-free ``v_free`` of a step of ``dt`` (the stepper's contact hook)."""
    sol = solve_rigid_contact(model, contact, state.q, state.v, v_free, dt)
    return State(integrate(model, state.q, sol.v_plus, dt), sol.v_plus, state.t + dt), sol.force


__all__ = ["RigidContact", "RigidContactSolution", "contact_frame", "contact_jacobian", "delassus_matrix",
           "gauss_seidel", "normal_target", "rigid_contact_step", "solve_rigid_contact"]
