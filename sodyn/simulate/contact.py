r"""Compliant contact with regularized Coulomb friction: the force law (:func:`point_forces`)
and the body wrenches and implicit-step terms of every contact slot (:func:`contact_terms`).

**Contacts.**  A compliant contact model (:class:`CompliantContact`: :class:`~sodyn.simulate.
GroundContact` for points against a plane, :class:`~sodyn.simulate.ContactModel` for the
model's geoms against each other) gives, at a configuration, a fixed number of contact slots,
each between body 1 and body 2 (``−1``: the world) with a signed distance ``d``, a world normal
``n`` from body 1 to body 2 and a world position ``p`` midway between the surfaces
(:mod:`sodyn.collision`).  The material points of the two bodies at ``p`` move with ``ṗ₁`` and
``ṗ₂``; their relative velocity is ``u = ṗ₂ − ṗ₁``.  The spring's rest distance is ``d₀``
(the pair's ``margin``, 0 for points against the ground).  The penetration, its smooth
onset and its rate are

    δ = d₀ − d,     δ_s = w · softplus(δ / w),     δ̇ = −n·u,

with ``w`` the onset width (``δ_s`` is C∞, ``≈ δ`` once ``δ ≫ w`` and negligible once
``−δ ≫ w``).  The force on body 2, in world axes (body 1 receives ``−f`` at the same point), is

    f_n = max(0, k δ_s + c σ(δ/w) δ̇)                (σ the logistic; the max: no adhesion)
    f_t = −μ f_n u_t / sqrt(|u_t|² + ε²),  u_t = (I − n nᵀ) u     (regularized Coulomb)
    f   = f_n n + f_t

with stiffness ``k``, damping ``c``, friction coefficient ``μ`` and slip velocity ``ε``.  A
point held on a slope of angle ``θ`` creeps at ``|u_t| = ε tanθ / sqrt(μ² − tan²θ)`` (``≈ 2.06 ε``
at ``tanθ = 0.9 μ``).

**Restitution.**  On the ideal law (``w → 0``), a point of mass ``m`` hitting a fixed surface
bounces with the coefficient of restitution of the non-adhesive linear spring–dashpot
(Schwager & Pöschel, Granular Matter 9, 2007): with ``ω₀ = sqrt(k/m)``, ``β = c/(2m)``,
``ω = sqrt(ω₀² − β²)``,

    e = exp(−β/ω · (π − arctan(2βω / (ω² − β²))))      for β < ω₀/√2,
    e = exp(−β/ω · arctan(2βω / (β² − ω²)))            for ω₀/√2 < β < ω₀,

``e = exp(−2)`` at critical damping and ``e = exp(−β/Ω · ln((β + Ω)/(β − Ω)))``,
``Ω = sqrt(β² − ω₀²)``, above it (:func:`restitution_coefficient`).  The force reaches zero,
and the point leaves, before the penetration returns to zero.

**Defaults** (``M`` the model's total mass, ``g = |gravity|``, or 9.81 without gravity):
stiffness ``k = M g / 1 mm`` (one contact carrying the whole model sinks 1 mm), damping
``c = 2 ζ sqrt(k M)`` with ``ζ = damping_ratio = 1.5`` (a part of mass ``m < M`` striking at
speed ``v`` sinks about ``m v / c``: a limb falling at 5 m/s a few mm), friction ``μ = 1`` (or
the geoms' sliding friction), slip velocity ``ε = 2·10⁻⁴ m/s`` (creep below 0.5 mm/s at ``tanθ ≤ 0.9 μ``),
onset ``w = 10⁻⁴ m`` (:func:`default_stiffness_damping`).  Sticking friction is a damper of
rate about ``μ g / ε`` (≈ 5·10⁴ s⁻¹ at the defaults): the linearly implicit step takes it in
its stride, explicit integrators are stable only for ``dt`` of order ``ε / (μ g)`` (≈ 2·10⁻⁵ s),
or with a larger ``ε``.

**Implicit terms** (``dt`` given, for the linearly implicit Euler step of
:mod:`sodyn.simulate.stepping`): the law is linearized about the end of the step as predicted
from the start, the distance ``d_p = d + dt n·u``: with ``f``, ``K = k' n nᵀ`` and
``C = c' n nᵀ + (μ f_n / s)(I − n nᵀ)`` evaluated there (``k' = ∂f_n/∂δ`` clipped at 0,
``c' = ∂f_n/∂δ̇``, ``s = sqrt(|u_t|² + ε²)``), the step applies ``f_expl − K_eff (u⁺ − u) / dt``
with ``u⁺`` the end-of-step relative velocity and

    f_expl = f(d_p),     K_eff = dt C + dt² K,
    B_k = Σ_{sides on k} Sᵀ (R_kᵀ K_eff R_k) S,
    f_k = Σ_{sides on k} ±Sᵀ R_kᵀ f_expl − B_k [0; R_kᵀ g],

``S = [−r̃, I₃]`` for the contact point ``r`` in body ``k``'s frame (``Sᵀ f = [r × f; f]``),
``R_k`` the body's world rotation, ``+`` on body 2 and ``−`` on body 1.  For a linear spring
this is the same step as expanding about ``d`` (``f(d) + dt k' δ̇``); at the onset it is not:
a contact that closes within a step pushes in that step, as implicit Euler would, where an
expansion about ``d`` (zero force and slope while apart) would let the spring store ``½ k δ²``
it never took from the motion, energy from nowhere at large ``dt`` or stiffness.  ``B_k``
enters the articulated inertia; the last term removes what ``B_k`` would otherwise pick up
from the recursion's fictitious acceleration ``−g``.  Each body takes its own side of a contact
implicitly and the other body's end-of-step velocity explicitly (a block-Jacobi splitting of
``Jᵀ K_eff J`` with ``J = J₂ − J₁``): since ``Jᵀ K_eff J ≤ 2 (J₁ᵀ K_eff J₁ + J₂ᵀ K_eff J₂)``, the
amplification of the step's linear part lies in ``(−1, 1]``, so the step stays stable at any
``dt`` for stiff contacts between two moving bodies as against the ground, and one O(N)
forward-dynamics pass still solves it.  Left there, two bodies that accelerate together
through a contact (a pusher and what it pushes) would each carry the contact's ``K_eff ≈ dt c``
as added inertia along the normal; the step's coupling passes
(:mod:`sodyn.simulate.coupling`) put the cross terms back by preconditioned conjugate
gradients on the fully coupled step.

**Not modelled:** rolling and torsional friction (``condim`` 4 and 6 load as sliding friction),
and friction anisotropy.
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.common import check_vector, model_params, prepare
from sodyn.algorithms.kinematics import poses_and_motions_levels
from sodyn.collision.types import Contacts
from sodyn.model import Model
from sodyn.runtime.tuning import FORWARD_UNROLL
from sodyn.static_index import spread_sum, take
from sodyn.topology import dofs_to_levels

#: Default slip velocity ``ε`` of the regularized Coulomb law, m/s.
SLIP_VELOCITY = 2e-4
#: Default onset width ``w`` of the normal force, m.
ONSET = 1e-4
#: Default sinking of one contact carrying the whole model, m (sets the default stiffness).
SINK = 1e-3
#: Default damping ratio ``ζ`` of the normal law against the whole model's mass (module docstring).
DAMPING_RATIO = 1.5
#: ``|g|`` used for the default stiffness of a model without gravity, m/s².
STANDARD_GRAVITY = 9.81

LAW_PARAMETERS = ("stiffness", "damping", "friction", "slip_velocity", "onset")


def concrete_array(x) -> np.ndarray | None:
    """``x`` as a NumPy array when its value is known at trace time, else ``None``."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x)


def float_array(x, where: str, name: str) -> jax.Array:
    """``x`` as a floating array (integers take the default float dtype); ``ValueError`` naming
    ``where`` and ``name`` for what is not an array of numbers."""
    try:
        a = jnp.asarray(x)
    except TypeError as e:
        raise ValueError(f"{where}: {name} must be an array of numbers, got {type(x).__name__}") from e
    if not jnp.issubdtype(a.dtype, jnp.floating):
        a = a.astype(jnp.zeros(()).dtype)
    return a


def check_law_values(where: str, contact) -> None:
    """Known values of the law's parameters must be finite, non-negative (stiffness, damping,
    friction) or positive (slip velocity, onset): ``ValueError`` naming the first that is not."""
    for name, strict in (("stiffness", False), ("damping", False), ("friction", False),
                         ("slip_velocity", True), ("onset", True)):
        x = concrete_array(getattr(contact, name))
        if x is not None and (np.any(~np.isfinite(x)) or np.any(x <= 0 if strict else x < 0)):
            bound = "positive" if strict else "non-negative"
            raise ValueError(f"{where}: {name} must be finite and {bound}, got {x.tolist()}")


def default_stiffness_damping(model: Model, stiffness, damping, damping_ratio, where: str = "contact"):
    """``(stiffness, damping)`` with the defaults of the module docstring filled in:
    ``k = M g / SINK``, ``c = 2 ζ sqrt(k M)``."""
    total = float(np.sum(np.asarray(model.mass, np.float64)))
    if stiffness is None:
        g = float(np.linalg.norm(np.asarray(model.gravity, np.float64))) or STANDARD_GRAVITY
        stiffness = total * g / SINK
    if damping is None:
        ratio = concrete_array(damping_ratio)
        if ratio is not None and (np.any(ratio < 0) or np.any(~np.isfinite(ratio))):
            raise ValueError(f"{where}: damping_ratio must be finite and non-negative, got {ratio}")
        k = concrete_array(stiffness)
        if k is not None and np.any(k < 0):
            raise ValueError(f"{where}: stiffness must be finite and non-negative, got {k.tolist()}")
        damping = 2.0 * jnp.asarray(damping_ratio) * jnp.sqrt(jnp.asarray(stiffness) * total)
    return stiffness, damping


class CompliantContact(eqx.Module):
    """A compliant contact model: contact slots between pairs of bodies, and the parameters of
    the force law (module docstring).  Subclasses give the slots' bodies (static), their
    geometry at given body poses, and the law's parameters per slot."""

    @abc.abstractmethod
    def slot_bodies(self, model: Model) -> tuple[np.ndarray, np.ndarray]:
        """Body 1 and body 2 of each slot, ``(nc,)`` static integer arrays (``−1``: the world)."""

    @abc.abstractmethod
    def contacts(self, model: Model, rotation: jax.Array, origin: jax.Array) -> Contacts:
        """Each slot's signed distance, world position and normal (body 1 to body 2) with the
        bodies at world rotations ``(n_bodies, 3, 3)`` and origins ``(n_bodies, 3)``."""

    @abc.abstractmethod
    def law(self, dtype) -> "LawParameters":
        """The force law's parameters, each ``()`` or ``(nc,)``."""


class LawParameters(NamedTuple):
    """The force law's parameters per slot (or scalars): ``stiffness`` ``k``, ``damping`` ``c``,
    ``friction`` ``μ``, ``slip_velocity`` ``ε``, ``onset`` ``w``, and ``rest`` ``d₀``."""

    stiffness: jax.Array
    damping: jax.Array
    friction: jax.Array
    slip_velocity: jax.Array
    onset: jax.Array
    rest: jax.Array | float = 0.0


class PointForces(NamedTuple):
    """The force law at the slots: ``force (nc, 3)`` (on body 2), ``penetration (nc,)`` ``δ``,
    ``normal_force (nc,)``, and the derivatives the implicit terms use: ``normal_stiffness``
    ``k'`` (clipped at 0), ``normal_damping`` ``c'``, ``tangential_damping`` ``μ f_n / s``, all
    ``(nc,)``."""

    force: jax.Array
    penetration: jax.Array
    normal_force: jax.Array
    normal_stiffness: jax.Array
    normal_damping: jax.Array
    tangential_damping: jax.Array


def point_forces(law, normal: jax.Array, distance: jax.Array, velocity: jax.Array) -> PointForces:
    """The force law (module docstring) at slots at signed ``distance`` ``(nc,)`` whose bodies'
    relative velocity is ``velocity = u`` ``(nc, 3)``; ``normal`` ``(3,)`` or ``(nc, 3)`` is
    ``n`` in the axes of ``velocity`` (the force comes out in those axes).  ``law``: any value
    with the attributes of :class:`LawParameters` (``rest`` optional, default 0)."""
    dtype = velocity.dtype
    k, c, mu, eps, w = (jnp.asarray(getattr(law, f), dtype) for f in LAW_PARAMETERS)
    delta = jnp.asarray(getattr(law, "rest", 0.0), dtype) - distance
    x = delta / w
    sig = jax.nn.sigmoid(x)
    rate = -spatial.dot(normal, velocity)
    raw = k * w * jax.nn.softplus(x) + c * sig * rate
    active = raw > 0
    f_n = jnp.where(active, raw, 0.0)
    v_t = velocity - spatial.scale(spatial.dot(normal, velocity), jnp.broadcast_to(normal, velocity.shape))
    s = jnp.sqrt(spatial.dot(v_t, v_t) + eps * eps)
    damp_t = mu * f_n / s
    force = spatial.scale(f_n, jnp.broadcast_to(normal, velocity.shape)) - spatial.scale(damp_t, v_t)
    k_prime = jnp.where(active, jnp.maximum(k * sig + c * sig * (1.0 - sig) * rate / w, 0.0), 0.0)
    c_prime = jnp.where(active, c * sig, 0.0)
    return PointForces(force, delta, f_n, k_prime, c_prime, damp_t)


class ContactTerms(NamedTuple):
    """What :func:`contact_terms` returns.

    ``f_ext (n_bodies, 6)``: body-frame wrenches ``[n; f]`` about each body origin;
    ``added_inertia (n_bodies, 6, 6)`` or ``None``: the ``B_k`` of the implicit step;
    ``force (nc, 3)``: the world-frame force on body 2 of each slot at the given state (with
    ``dt``: ``f_expl``, at the predicted end-of-step distance);
    ``penetration (nc,)``: ``δ = d₀ − d`` (negative when apart);
    ``linearization``: with ``dt``, the :class:`SlotCoupling` of every slot (a world side:
    identity rotation, zero point), else ``None``; ``coupling``: the same when some slot is
    between two moving bodies (else ``None``)."""

    f_ext: jax.Array
    added_inertia: jax.Array | None
    force: jax.Array
    penetration: jax.Array
    coupling: "SlotCoupling | None" = None
    linearization: "SlotCoupling | None" = None


class SlotCoupling(NamedTuple):
    """Per slot, what the coupling passes of the implicit step need (:mod:`sodyn.simulate.
    coupling`): the two bodies' world rotations ``rotation1``, ``rotation2`` ``(nc, 3, 3)``, the
    contact point in each body's frame ``point1``, ``point2`` ``(nc, 3)`` (world-side rows:
    identity and zero), the world ``normal (nc, 3)``, and ``K_eff = tangent I + (normal_gain −
    tangent) n nᵀ`` by its gains ``(nc,)``."""

    rotation1: jax.Array
    rotation2: jax.Array
    point1: jax.Array
    point2: jax.Array
    normal: jax.Array
    normal_gain: jax.Array
    tangent_gain: jax.Array


def body_states(model: Model, q: jax.Array, v: jax.Array):
    """World rotations and positions and body-frame velocities ``[ω; v]`` of all bodies in the
    compact slot layout, by the one kinematics scatter
    (:func:`~sodyn.algorithms.kinematics.poses_and_motions_levels`, without accelerations)."""
    topo = model.topology
    pm = poses_and_motions_levels(prepare(model, q), topo, dofs_to_levels(topo, v, 0.0), None, FORWARD_UNROLL)
    return pm.rotation, pm.translation, pm.velocity


def body_frames(model: Model, q: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """:func:`body_states` in body order: ``(n_bodies, 3, 3)``, ``(n_bodies, 3)``, ``(n_bodies, 6)``."""
    topo = model.topology
    slots = np.asarray(topo.body_flat)
    return tuple(take(x.reshape((topo.width,) + x.shape[2:]), slots) for x in body_states(model, q, v))


def check_slot_bodies(model: Model, body1: np.ndarray, body2: np.ndarray) -> None:
    """Every slot's bodies must be ``−1`` (the world) or a body of ``model``, and not both the
    world (ValueError naming the first index out of range)."""
    for body in (body1, body2):
        bad = body[(body < -1) | (body >= model.n_bodies)]
        if bad.size:
            raise ValueError(f"contact: body index {int(bad[0])} out of range for model {model.name!r} "
                             f"({model.n_bodies} bodies)")
    if np.any((body1 < 0) & (body2 < 0)):
        raise ValueError("contact: a contact slot between the world and the world")


def _side(x: jax.Array, world: jax.Array, body: np.ndarray, n_bodies: int) -> jax.Array:
    """``x[body]`` per slot, the ``world`` value where ``body = −1``."""
    return take(jnp.concatenate([x, world[None]], axis=0), np.where(body < 0, n_bodies, body))


def contact_terms(model: Model, contact: CompliantContact, q, v, dt=None) -> ContactTerms:
    r"""Contact forces as body wrenches, and with ``dt`` the terms of the linearly implicit step
    (module docstring), in one kinematics sweep and O(nc) work.

    ``dt=None``: ``f_ext = Σ ±Sᵀ R_kᵀ f`` per body (body frame) and ``added_inertia=None``
    (for explicit integrators).  ``dt``: ``f_ext = Σ ±Sᵀ R_kᵀ f_expl − B_k [0; R_kᵀ g]`` and
    ``added_inertia = B``, for ``forward_dynamics(..., f_ext, added_inertia=B)``: the recursion
    adds ``B_k`` to the articulated inertias, where it multiplies the body accelerations
    ``α_k = J_k a + α⁰_k − [0; R_kᵀ g]`` (``α⁰_k = J̇_k v``; ``−g`` the world's fictitious
    acceleration, which the correction in ``f_ext`` cancels), so it solves
    ``(M + Σ J_kᵀ B_k J_k) a = τ − C + Σ J_kᵀ (Σ ±Sᵀ R_kᵀ f_expl − B_k α⁰_k)``.

    **Arguments:** ``q (nq,)``, ``v (nv,)`` (their dtype is used); ``dt`` a scalar or ``None``.

    **Returns** :class:`ContactTerms`.  **Raises** ``ValueError`` for wrong shapes or a slot on
    a body the model does not have.
    """
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    body1, body2 = (np.asarray(b, np.int64) for b in contact.slot_bodies(model))
    check_slot_bodies(model, body1, body2)
    nb, dtype = model.n_bodies, q.dtype
    m = model_params(model, dtype)
    rot, origin, twist = body_frames(model, q, v)
    c = contact.contacts(model, rot, origin)
    eye, zero3, zero6 = jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype), jnp.zeros(6, dtype)
    sides, velocity = [], jnp.zeros_like(c.position)
    for sign, body in ((-1.0, body1), (1.0, body2)):
        if np.all(body < 0):
            continue                                                         # the world's side: nothing moves
        r_s, o_s, t_s = _side(rot, eye, body, nb), _side(origin, zero3, body, nb), _side(twist, zero6, body, nb)
        r = spatial.mtv(r_s, c.position - o_s)                              # contact point, body frame
        omega, lin = spatial.halves(t_s)
        velocity = velocity + sign * spatial.mv(r_s, lin + spatial.cross(omega, r))   # u = ṗ₂ − ṗ₁, world
        sides.append((sign, body, r_s, r))
    params = contact.law(dtype)
    if dt is None:
        law = point_forces(params, c.normal, c.distance, velocity)
    else:   # the law's value and slopes at the predicted end-of-step distance d + dt n·u
        dt = jnp.asarray(dt, dtype)
        law = point_forces(params, c.normal, c.distance + dt * spatial.dot(c.normal, velocity), velocity)
        a = dt * law.normal_damping + dt * dt * law.normal_stiffness     # K_eff = b I + (a − b) n nᵀ
        b = dt * law.tangential_damping
    f = law.force
    wrenches, added = [], []
    for sign, _, r_s, r in sides:
        f_b = sign * spatial.mtv(r_s, f)
        wrench = jnp.concatenate([spatial.cross(r, f_b), f_b], axis=-1)
        if dt is not None:
            n_b = spatial.mtv(r_s, c.normal)
            u = jnp.concatenate([spatial.cross(r, n_b), n_b], axis=-1)      # Sᵀ n_b
            added.append(spatial.scale_matrix(b, _sts(r))
                         + spatial.scale_matrix(a - b, u[..., :, None] * u[..., None, :]))
            g_b = spatial.mtv(r_s, jnp.broadcast_to(m.gravity, n_b.shape))
            wrench = wrench - (spatial.scale(b, jnp.concatenate([spatial.cross(r, g_b), g_b], axis=-1))
                               + spatial.scale((a - b) * spatial.dot(n_b, g_b), u))   # B_p [0; g_b]
        wrenches.append(wrench)
    target = np.concatenate([np.where(body < 0, nb, body) for _, body, _, _ in sides])
    f_ext = spread_sum(jnp.concatenate(wrenches), target, nb + 1)[:nb]
    b_ext = None if dt is None else spread_sum(jnp.concatenate(added), target, nb + 1)[:nb]
    linear = coupling = None
    if dt is not None:
        world = (jnp.broadcast_to(eye, c.position.shape + (3,)), jnp.zeros_like(c.position))
        side = {sign: (r_s, r) for sign, _, r_s, r in sides}
        (rot1, r1), (rot2, r2) = side.get(-1.0, world), side.get(1.0, world)
        gains = jnp.broadcast_arrays(a, b, c.distance)
        linear = SlotCoupling(rot1, rot2, r1, r2, c.normal, gains[0], gains[1])
        coupling = linear if np.any((body1 >= 0) & (body2 >= 0)) else None
    return ContactTerms(f_ext, b_ext, law.force, jnp.asarray(params.rest, dtype) - c.distance, coupling, linear)


def _sts(r: jax.Array) -> jax.Array:
    """``SᵀS = [[|r|² I − r rᵀ, r̃], [−r̃, I]]`` for ``S = [−r̃, I]``."""
    rx = spatial.skew(r)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=r.dtype), rx.shape)
    top = jnp.concatenate([spatial.scale_matrix(spatial.dot(r, r), eye) - r[..., :, None] * r[..., None, :], rx], -1)
    bottom = jnp.concatenate([-rx, eye], -1)
    return jnp.concatenate([top, bottom], -2)


def restitution_coefficient(stiffness, damping, mass) -> jax.Array:
    """Coefficient of restitution of the non-adhesive linear spring–dashpot (module docstring;
    Schwager & Pöschel 2007) for a point of ``mass`` with the ideal law (onset ``w → 0``).
    Works elementwise on arrays, with NaN-free gradients away from ``β = ω₀`` exactly."""
    k, c, m = (jnp.asarray(x) for x in (stiffness, damping, mass))
    k, c, m = jnp.broadcast_arrays(*(x.astype(jnp.result_type(k, c, m, 1.0)) for x in (k, c, m)))
    w0_sq = k / m
    beta = c / (2.0 * m)
    gap = w0_sq - beta * beta
    critical = jnp.abs(gap) <= 1e-12 * w0_sq
    under = (gap > 0) & ~critical
    over = (gap < 0) & ~critical
    omega = jnp.sqrt(jnp.where(under, gap, 1.0))
    phase = jnp.pi - jnp.arctan2(2.0 * beta * omega, omega * omega - beta * beta)
    big = jnp.sqrt(jnp.where(over, -gap, 1.0))
    log_over = jnp.log(jnp.where(over, (beta + big) / jnp.where(over, beta - big, 1.0), 1.0))
    exponent = jnp.where(under, beta / omega * phase, jnp.where(over, beta / big * log_over, 2.0))
    return jnp.exp(-exponent)


__all__ = ["CompliantContact", "ContactTerms", "LawParameters", "PointForces", "SlotCoupling", "body_frames",
           "contact_terms",
           "default_stiffness_damping", "point_forces",
           "restitution_coefficient"]
