"""Joint limits, friction loss and joint springs as smooth, differentiable joint forces.

For each hinge (revolute, prismatic, helical) dof with position ``x``, velocity ``ẋ`` and
finite limits ``[l, u]``, the penetrations ``e_u = x − u`` and ``e_l = l − x`` enter a spring
with a C¹ onset of width ``w`` and a damper that fades in over the same width:

    π(e) = 0 (e ≤ 0),   e² / (2w) (0 < e < w),   e − w/2 (e ≥ w);      γ(e) = clip(e / w, 0, 1)
    τ_u = min(0, −k π(e_u) − d γ(e_u) ẋ),        τ_l = max(0, k π(e_l) − d γ(e_l) ẋ)

(the ``min``/``max`` keep a limit from pulling a joint back into it).  With a finite
``limit_force_max`` ``τ_b`` the push ``p = k π(e) + d γ(e) |ẋ|`` saturates smoothly,
``τ_b tanh(p / τ_b)`` (its slopes scaled by ``1 − tanh²``), so no limit force exceeds ``τ_b``.
The implicit step applies these forces linearized at the end of the step (what
:class:`~sodyn.simulate.StepForces` records, ``limit``): against a stiff damper a joint hitting its
limit at speed feels the force that stops it within the step, not ``d ẋ``.  Friction loss with bound
``F`` (``model.friction``, MuJoCo's ``frictionloss``, URDF ``<dynamics friction>``) is
regularized Coulomb friction, ``τ_f = −F ẋ / sqrt(ẋ² + ε²)``: below the breakaway torque a
driven joint creeps at a speed of order ``ε``.  Springs pull with ``−stiffness ⊙ (q ⊖
spring_reference)``; joint damping (``model.damping``) is applied by the dynamics themselves.
With ``velocity_limits``, a joint faster than its velocity limit ``W`` (``model.velocity_limit``,
URDF ``velocity``) is braked by a stiff damper on the excess, ``τ = −d_v (ẋ − clip(ẋ, −W, W))``,
linearized about the implicit step's predicted end-of-step velocity (so a step that would carry
a joint past ``W`` is braked in that step; the speed then exceeds ``W`` by about ``τ_other /
d_v``, ``τ_other`` the other forces driving the joint), and the end-of-step velocity is clipped
to ``[−W, W]`` where the prediction missed (a velocity projection, as physics engines' joint
speed limits are; :class:`~sodyn.simulate.StepForces` records it, with the brake, as the
force ``𝓜(q) Δv / dt`` of its velocity change ``Δv``, in ``joint`` and ``velocity_limit``).
Only the ``"implicit"`` integrator takes velocity limits.
Gravity compensation (``model.gravcomp``, MuJoCo's body ``gravcomp``) is the passive force
``τ_gc = g̃(q)``, the generalised gravity force of the compensated masses
(:func:`gravity_compensation`).

:func:`joint_forces` returns the force with its stiffness ``−∂τ/∂q`` and damping ``−∂τ/∂v``
per dof (the friction's as the secant ``F / sqrt(ẋ² + ε²)``), which the linearly implicit
stepper puts on the diagonal of the articulated-body recursion.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn.algorithms.inverse_dynamics import gravity_forces
from sodyn.configuration import difference
from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.simulate.contact import concrete_array
from sodyn.static_index import spread_sum


class JointForces(eqx.Module):
    """Parameters of the joint limit and friction-loss models (module docstring).

    ``limit_stiffness`` ``k`` (N·m/rad, or N/m for prismatic joints), ``limit_damping`` ``d``,
    ``limit_onset`` ``w`` (rad or m), ``limit_force_max`` ``τ_b`` (N·m or N; ``inf``: no bound)
    and ``friction_velocity`` ``ε`` (rad/s or m/s) are scalar leaves, so they can be randomized
    and differentiated, as is ``velocity_limit_damping`` ``d_v`` (N·m·s/rad or N·s/m).
    ``limits``, ``friction``, ``springs``, ``gravcomp`` (gravity compensation) and
    ``velocity_limits`` (off by default) switch each part on or off (static).
    """

    limit_stiffness: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(1e5), converter=jnp.asarray)
    limit_damping: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(1e4), converter=jnp.asarray)
    limit_onset: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(1e-3), converter=jnp.asarray)
    limit_force_max: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(jnp.inf), converter=jnp.asarray)
    velocity_limit_damping: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(1e4), converter=jnp.asarray)
    friction_velocity: jax.Array = eqx.field(default_factory=lambda: jnp.asarray(1e-3), converter=jnp.asarray)
    limits: bool = eqx.field(static=True, default=True)
    friction: bool = eqx.field(static=True, default=True)
    springs: bool = eqx.field(static=True, default=True)
    gravcomp: bool = eqx.field(static=True, default=True)
    velocity_limits: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        for name in ("limit_stiffness", "limit_damping", "limit_onset", "limit_force_max", "friction_velocity",
                     "velocity_limit_damping"):
            x = getattr(self, name)
            if x.shape != ():
                raise ValueError(f"JointForces.{name} must be a scalar, got shape {x.shape}")


class JointTerms(NamedTuple):
    """Joint forces ``force (nv,)`` with their stiffness ``−∂τ/∂q`` and damping ``−∂τ/∂v``
    per dof (both ``(nv,)``, non-negative); ``limit`` the limits' share of the three."""

    force: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    limit: tuple[jax.Array, jax.Array, jax.Array]


def hinge_indices(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Static ``q`` and ``v`` indices of the hinge dofs (the joints that have limits)."""
    topo = model.topology
    hinges = [k for k, t in enumerate(topo.joint_type) if KERNEL_OF.get(t) == "hinge"]
    return (np.array([int(topo.q_start[k]) for k in hinges], dtype=np.int32),
            np.array([int(topo.v_start[k]) for k in hinges], dtype=np.int32))


def _onset(e: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``π(e)``, ``π'(e) = γ(e)`` for the C¹ onset of width ``w``."""
    ramp = jnp.clip(e / w, 0.0, 1.0)
    inside = jnp.clip(e, 0.0, w)
    pen = jnp.where(e >= w, e - 0.5 * w, inside * inside / (2.0 * w))
    return pen, ramp, ramp


def _penetration(x, bound, sign):
    """How far ``x`` is past one side's bound (``sign = +1`` upper, ``−1`` lower); an infinite
    bound gives −1, which never reaches the onset."""
    finite = jnp.isfinite(bound)
    return jnp.where(finite, sign * (x - jnp.where(finite, bound, 0.0)), -1.0)


def limit_force(x, v, bound, sign, params: JointForces):
    """One side's limit force at coordinate ``x``, rate ``v`` and bound ``bound`` (module
    docstring's law) and its slopes ``(τ, −∂τ/∂x, −∂τ/∂v)``; ``sign = +1`` upper, ``−1`` lower."""
    e = _penetration(x, bound, sign)
    k, d, w = params.limit_stiffness, params.limit_damping, params.limit_onset
    pen, ramp, gate = _onset(e, w)
    push = k * pen + sign * d * gate * v       # magnitude pushing out of the limit
    active = push > 0
    bound = params.limit_force_max
    finite = jnp.isfinite(bound)
    scale = jnp.where(finite, bound, 1.0)
    saturated = jnp.tanh(push / scale)
    slope = jnp.where(finite, 1.0 - saturated * saturated, 1.0)
    push = jnp.where(finite, scale * saturated, push)
    tau = jnp.where(active, -sign * push, 0.0)
    stiffness = jnp.where(active, slope * k * ramp, 0.0)
    damping = jnp.where(active, slope * d * gate, 0.0)
    return tau, stiffness, damping


def friction_loss(bound: jax.Array, rate: jax.Array, eps) -> tuple[jax.Array, jax.Array]:
    """Regularized Coulomb friction with bound ``F`` at rate ``ẋ`` (module docstring):
    ``−F ẋ / sqrt(ẋ² + ε²)`` and its secant damping ``F / sqrt(ẋ² + ε²)``."""
    speed = jnp.sqrt(rate * rate + eps ** 2)
    return -bound * rate / speed, bound / speed


def may_be_nonzero(x) -> bool:
    """False only for a parameter known at trace time to be all zero (its term is then skipped)."""
    value = concrete_array(x)
    return value is None or bool(np.any(value != 0))


def velocity_bounds(model: Model, dtype) -> jax.Array:
    """Each dof's velocity limit ``W (nv,)``, ``inf`` where none is given (zero or ``inf``)."""
    w = model.velocity_limit.astype(dtype)
    return jnp.where(jnp.isfinite(w) & (w > 0), w, jnp.inf)


def velocity_limit_force(model: Model, params: JointForces, v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The velocity limits' brake ``−d_v (ẋ − clip(ẋ, −W, W))`` at ``v`` and its damping
    ``−∂τ/∂v`` per dof (module docstring)."""
    params = jax.tree_util.tree_map(lambda x: x.astype(v.dtype), params)
    bound = velocity_bounds(model, v.dtype)
    excess = v - jnp.clip(v, -bound, bound)
    d = params.velocity_limit_damping
    return -d * excess, jnp.where(excess != 0, d, 0.0)


def joint_forces(model: Model, params: JointForces, q: jax.Array, v: jax.Array) -> JointTerms:
    """Limit, friction-loss and spring forces at ``(q, v)`` with their per-dof slopes (the
    velocity limits are the implicit step's: :func:`velocity_limit_force`)."""
    dtype = q.dtype
    params = jax.tree_util.tree_map(lambda x: x.astype(dtype), params)
    force = jnp.zeros(model.nv, dtype)
    stiffness = jnp.zeros(model.nv, dtype)
    damping = jnp.zeros(model.nv, dtype)
    if params.springs and may_be_nonzero(model.stiffness):
        k = model.stiffness.astype(dtype)
        force = force - k * difference(model, model.spring_reference.astype(dtype), q)
        stiffness = stiffness + k
    if params.friction and may_be_nonzero(model.friction):
        f, c = friction_loss(model.friction.astype(dtype), v, params.friction_velocity)
        force, damping = force + f, damping + c
    if params.gravcomp and may_be_nonzero(model.gravcomp):
        force = force + gravity_compensation(model, q)
    qi, vi = hinge_indices(model)
    limit = (jnp.zeros(model.nv, dtype),) * 3
    if params.limits and len(qi):
        x, xd = q[qi], v[vi]
        upper = limit_force(x, xd, model.upper_limit.astype(dtype)[qi], 1.0, params)
        lower = limit_force(x, xd, model.lower_limit.astype(dtype)[qi], -1.0, params)
        limit = tuple(spread_sum(a + b, vi, model.nv) for a, b in zip(upper, lower, strict=True))
    return JointTerms(force + limit[0], stiffness + limit[1], damping + limit[2], limit)


def gravity_compensation(model: Model, q: jax.Array) -> jax.Array:
    """The gravity compensation force ``τ_gc = g̃(q)``: inverse dynamics at rest of the masses
    ``m̃`` at ``c̃`` that ``model.gravcomp`` holds, so that ``τ_gc`` cancels the compensated
    share of the bodies' weight (MuJoCo's ``qfrc_gravcomp``)."""
    dtype = q.dtype
    carried = model.gravcomp.astype(dtype)
    mass = carried[:, 0]
    held = mass != 0
    com = jnp.where(held[:, None], carried[:, 1:] / jnp.where(held, mass, 1.0)[:, None], 0.0)
    zero = jnp.zeros(model.nv, dtype)
    carrier = eqx.tree_at(lambda m: (m.mass, m.com, m.damping, m.armature), model, (mass, com, zero, zero))
    return gravity_forces(carrier, q)


def joint_potential_energy(model: Model, params: JointForces, q: jax.Array) -> jax.Array:
    """The potential of the springs and limit springs, ``Σ ½ stiffness (q ⊖ q_ref)² + Σ k Π(e)``
    with ``Π' = π`` (``Π(e) = e³/(6w)`` below the onset width, ``e²/2 − we/2 + w²/6`` above)."""
    dtype = q.dtype
    params = jax.tree_util.tree_map(lambda x: x.astype(dtype), params)
    energy = jnp.zeros((), dtype)
    if params.springs:
        d = difference(model, model.spring_reference.astype(dtype), q)
        energy = energy + 0.5 * jnp.sum(model.stiffness.astype(dtype) * d * d)
    qi, _ = hinge_indices(model)
    if params.limits and len(qi):
        w = params.limit_onset
        for bound, sign in ((model.upper_limit, 1.0), (model.lower_limit, -1.0)):
            e = _penetration(q[qi], bound.astype(dtype)[qi], sign)
            inside = jnp.clip(e, 0.0, w)
            big = jnp.maximum(e, w)
            potential = jnp.where(e >= w, 0.5 * big * big - 0.5 * w * big + w * w / 6.0, inside ** 3 / (6.0 * w))
            energy = energy + params.limit_stiffness * jnp.sum(potential)
    return energy


__all__ = ["JointForces", "JointTerms", "friction_loss", "gravity_compensation", "hinge_indices",
           "joint_forces", "joint_potential_energy", "limit_force", "may_be_nonzero", "velocity_bounds",
           "velocity_limit_force"]
