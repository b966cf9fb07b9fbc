"""Time steppers on the joint manifold (quaternions stay unit).

``integrator="implicit"`` (default) is semi-implicit Euler with every stiff force linearized
at the end of the step.  Each force ``τ(q, v)`` whose stiffness ``K = −∂τ/∂q`` and damping
``C = −∂τ/∂v`` are per dof (joint damping, springs, limits, friction loss, servo gains) is
evaluated at ``(q + dt v⁺, v⁺)`` to first order, and so is every contact point's force
(:mod:`sodyn.simulate.contact`):

    (𝓜 + diag(dt C + dt² K) + Σ_k J_k* B_k J_k) a = τ − dt K v − C(q, v) + Σ_k J_k* f_k
    v⁺ = v + dt a,        q⁺ = q ⊕ dt v⁺

The diagonal joins the armature in the articulated-body recursion and the contact terms
``B_k`` join the body inertias (``forward_dynamics(..., added_inertia=B)``), so a solve is
one O(N) forward-dynamics pass: no matrix is formed.  Stiff joint dampers and contacts
therefore stay stable at the time steps a robot's controller runs at.

**Velocity-product forces.**  The bias ``C(q, v)`` above is gravity plus ``h(q, v)``, the
Coriolis, centrifugal and gyroscopic forces, quadratic in ``v``.  As
``v⁺ᵀ h(q, v⁺) = ½ v⁺ᵀ 𝓜̇ v⁺`` (``𝓜̇ = Σ_k ∂𝓜/∂q_k v⁺_k``), the kinetic energy's change with
``𝓜`` over the step is

    ½ v⁺ᵀ (𝓜(q⁺) − 𝓜(q)) v⁺ = dt v⁺ᵀ h(q, v⁺) + O(dt²),

so velocity-product forces ``h̃`` applied in place of ``h(q, v⁺)`` make the energy
``dt v⁺ᵀ (h(q, v⁺) − h̃)`` from nothing.  Taken at the start, ``h̃ = h(q, v)``, that is of first
order in the step's velocity change ``v⁺ − v``: large when a step changes the velocity by much
(a stiff contact catching a light, fast limb).  The step takes them at the predicted
end-of-step velocity instead (``𝓜_s`` the matrix above, ``r`` its right-hand side without
``h``):

    a₀ = 𝓜_s⁻¹ (r − h(q, v)),        w = v + dt a₀,        a = 𝓜_s⁻¹ (r − h(q, w)),

(the second solve is the forward dynamics at velocity ``w``: the contacts' ``B_k ᾱ(k)``, whose
``ᾱ(k)`` holds ``J̇_k w``, and a free joint's linear-armature velocity force go with ``h``), so
``v⁺ − w = −dt 𝓜_s⁻¹ (h(q, w) − h(q, v)) ≈ −dt 𝓜_s⁻¹ H (w − v)`` with ``H = ∂h/∂v``: the
error is the explicit one times ``dt 𝓜_s⁻¹ H``.  On a gyroscopic mode of frequency ``ω``
(``dt 𝓜_s⁻¹ H`` with eigenvalue ``iθ``, ``θ = ω dt``) the velocity's amplification is
``|1 − iθ − θ²|² = 1 − θ² + θ⁴``: dissipative for ``θ < 1``, where explicit ``h`` grows it by
``1 + θ²``.  A step is two forward-dynamics solves (with the contact's coupling passes on the
second, :mod:`sodyn.simulate.coupling`) on one articulated-body factorization of the matrix
(:mod:`sodyn.algorithms.factored_dynamics`: the Riccati gather once, each solve a velocity
scatter, a gather of 6-vectors and the acceleration scatter); the joint damping stays a force
at ``v``.

``"semi_implicit"`` is symplectic Euler with all forces explicit (``v⁺ = v + dt a(q, v)``,
``q⁺ = q ⊕ dt v⁺``).  ``"rk4"`` is the classical fourth-order Runge–Kutta scheme on the joint
manifold (Munthe-Kaas form: the stages move in the chart ``q ⊕ ξ`` with
:func:`sodyn.joints.chart_rate`), all forces explicit; the control and external forces are
held over the step.

Joint velocity limits (``JointForces(velocity_limits=True)``, ``"implicit"`` only) take their
brake linearized about the predicted end-of-step velocity ``v + dt a`` of the solve before
(:mod:`sodyn.simulate.joint_forces`): one more solve (a full forward dynamics, as the brake's
slope joins the matrix), and a clip ``v⁺ = clip(v + dt a, −W, W)``
where it still misses, recorded as the force ``𝓜(q) (v⁺ − v − dt a) / dt``.  The
forces a step applies and the sensors it reads are in :mod:`sodyn.simulate.step_terms` (with
substeps, averaged over them like the forces).

``contact=RigidContact(ground)`` (:mod:`sodyn.simulate.rigid_contact`) replaces the compliant
contact forces by impulses: the step runs without contact (``"implicit"`` or
``"semi_implicit"``) to its velocity ``v_free``, the contact impulses of the Delassus problem
give ``v⁺``, and ``q⁺ = q ⊕ dt v⁺``.

Loop closures (``constraints=``, :class:`~sodyn.LoopClosures`) make the step's acceleration
the closed chain's (:func:`~sodyn.algorithms.constrained.constrained_forward_dynamics`, on the
same shifted system ``𝓜 + diag(…) + Σ J* B J`` for ``"implicit"``).  The two Euler steppers
ask that the end-of-step configuration ``q ⊕ dt (v + dt a)`` close the loops to second order,
``G_c a = −𝔡(q ⊕ dt v) / dt²`` (a deadbeat position-level stabilization: drift left by one
step is corrected in the next); ``"rk4"`` uses the continuous Baumgarte gains of
:data:`~sodyn.algorithms.constrained.DEFAULT_STABILIZATION`.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp

from sodyn.algorithms.articulated import FACTORS, forward_dynamics
from sodyn.algorithms.common import check_f_ext, passive_joint_force
from sodyn.algorithms.constrained import constrained_forward_dynamics, constraint_residual
from sodyn.algorithms.factored_dynamics import factorize
from sodyn.algorithms.factored_dynamics import solve as factored_solve
from sodyn.algorithms.inverse_dynamics import unchecked_inverse_dynamics
from sodyn.configuration import chart_rate, integrate
from sodyn.constraints import LoopClosures
from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.simulate.checks import (
    StateWatch,
    check_checks_option,
    checked_controls,
    checked_dt,
    checked_quaternions,
)
from sodyn.simulate.coupling import applied_force, coupled_solve, slot_wrenches
from sodyn.simulate.joint_forces import JointForces, velocity_bounds, velocity_limit_force
from sodyn.simulate.rigid_contact import RigidContact, rigid_contact_step
from sodyn.simulate.state import State
from sodyn.simulate.step_size import warn_if_stiff
from sodyn.simulate.step_terms import (
    Forces,
    StepForces,
    check_control,
    check_dt,
    next_act,
    readings,
    resolve_forces,
    step_terms,
)

INTEGRATORS: tuple[str, ...] = ("implicit", "semi_implicit", "rk4")


def _explicit_acceleration(model, forces, q, v, control, f_ext, activation, dt=None, step_dt=None):
    """``(a, recorded, terms)`` with every force at ``(q, v)``."""
    terms = step_terms(model, forces, q, v, control, f_ext, None, activation, dt if step_dt is None else step_dt)
    tau, recorded = terms.act.force + terms.joint.force, terms.recorded
    if forces.constraints is not None:
        a, recorded = _closed_acceleration(model, forces.constraints, q, v, tau, terms.f_ext, None, dt, recorded)
    else:
        a = forward_dynamics(model, q, v, tau, terms.f_ext)
    return a, recorded, terms


def _explicit_readings(model, forces, state, a, terms, recorded):
    """``recorded`` with the sensors' readings at the start of an explicit step."""
    wrench = None if terms.contact is None else terms.contact.f_ext
    return recorded._replace(sensors=readings(model, forces, state, a, terms, wrench))


def _closed_acceleration(model, closures, q, v, tau, f_ext, added, dt, recorded, v_start=None):
    """Constrained forward dynamics of a step: end-of-step target ``−𝔡(q ⊕ dt v)/dt²`` when
    ``dt`` is given (Euler steppers), Baumgarte otherwise (module docstring).  ``v_start``
    (default ``v``): the step's start velocity, for the target, when the dynamics' velocity
    products are taken at another ``v``."""
    moving = v if v_start is None else v_start
    target = None if dt is None else -constraint_residual(model, integrate(model, q, moving, dt), closures) / (dt * dt)
    a, cf = constrained_forward_dynamics(model, q, v, tau, closures, f_ext=f_ext, acceleration_target=target,
                                         added_inertia=added)
    return a, recorded._replace(constraint=cf.generalized)


def _clip_force(model, q, dv, dt):
    """The generalised force ``𝓜(q) Δv / dt`` (armature included) that changes the velocity by
    ``Δv`` over ``dt``: the velocity limits' clip as a force (one inverse-dynamics pass at zero
    velocity and gravity)."""
    still = eqx.tree_at(lambda m: m.gravity, model, jnp.zeros_like(model.gravity))
    return unchecked_inverse_dynamics(still, q, jnp.zeros_like(dv), dv / dt, None)


def _implicit_step(model, forces, state, control, f_ext, dt):
    q, v = state.q, state.v
    terms = step_terms(model, forces, q, v, control, f_ext, dt, state.act)
    act, joint, contact, f, recorded = terms.act, terms.joint, terms.contact, terms.f_ext, terms.recorded
    stiffness = act.stiffness + joint.stiffness
    damping = act.damping + joint.damping + model.damping.astype(q.dtype)
    diagonal = model.armature.astype(q.dtype) + dt * damping + dt * dt * stiffness
    shifted = eqx.tree_at(lambda m: m.armature, model, diagonal)
    added = None if contact is None else contact.added_inertia
    tau = act.force + joint.force - dt * stiffness * v
    # joint damping as a force at v (implicit through the diagonal), whatever velocity the
    # solves take their velocity products at
    tau = tau - model.damping.astype(q.dtype) * v
    shifted = eqx.tree_at(lambda m: m.damping, shifted, jnp.zeros_like(model.damping))
    undamped = eqx.tree_at(lambda m: m.damping, model, shifted.damping)
    closed = []
    # every solve on the shifted matrix shares one Riccati factorization (velocity limits
    # change the matrix of the second solve; closures solve their own way)
    factored = None if forces.constraints is not None else factorize(shifted, q, added)

    def solver(w, shifted=shifted, tau=tau, factored=factored):
        """Solves with the velocity-product forces at ``w`` (module docstring), on the
        ``factored`` matrix when given."""
        # a free joint's linear armature acts with its own value in the velocity products
        # (sodyn.algorithms.common.passive_joint_force), not with the shifted diagonal
        tau_w = tau + passive_joint_force(shifted, w) - passive_joint_force(undamped, w)

        def solve(wrenches):
            if factored is not None:
                return factored_solve(shifted, q, w, tau_w, wrenches, added, factored)
            if forces.constraints is None:
                return forward_dynamics(shifted, q, w, tau_w, wrenches, added_inertia=added)
            acc, rec = _closed_acceleration(shifted, forces.constraints, q, w, tau_w, wrenches, added, dt, recorded,
                                            v_start=v)
            closed[:] = [rec]
            return acc
        return solve

    predicted = solver(v)(f)                      # a₀, the velocity products at the start

    def solved(ahead):
        """a with the velocity products, and the velocity limits' brake, at ``ahead``."""
        brake, model_s, tau_s, factored_s = None, shifted, tau, factored
        if forces.joint.velocity_limits:          # linearized about the predicted end-of-step velocity
            force_w, slope = velocity_limit_force(model, forces.joint, ahead)
            brake = (force_w + slope * (ahead - v), slope)     # τ(v⁺) = brake[0] − slope (v⁺ − v)
            model_s = eqx.tree_at(lambda m: m.armature, shifted, shifted.armature + dt * slope)
            tau_s, factored_s = tau + brake[0], None
        solve = solver(ahead, model_s, tau_s, factored_s)
        if contact is None:
            return solve(f), brake
        return coupled_solve(model_s, forces.contact, contact.coupling, q, f, added, solve), brake

    a, brake = solved(v + dt * predicted)         # a, at the predicted end-of-step velocity
    if forces.joint.velocity_limits:              # once more where a joint's predicted speed was off
        a, brake = solved(v + dt * a)
    recorded = closed[0] if closed else recorded
    wrench = None
    if contact is not None:
        force = applied_force(model, forces.contact, contact.linearization, q, contact.force, a)
        recorded = recorded._replace(contact=force)
        if forces.sensors is not None:
            wrench = slot_wrenches(model, forces.contact, contact.linearization, force)
    v_solved = v + dt * a

    def applied(force, k, c):
        """A force linearized at the end of the step (module docstring)."""
        return force - dt * k * v_solved - c * (v_solved - v)

    joint_applied = applied(joint.force, joint.stiffness, joint.damping) - model.damping.astype(q.dtype) * v_solved
    v_next, speed_limit = v_solved, None
    if brake is not None:                         # the brake, and the clip where the prediction missed
        bound = velocity_bounds(model, q.dtype)
        v_next = jnp.clip(v_solved, -bound, bound)
        speed_limit = applied(brake[0], 0.0, brake[1]) + _clip_force(model, q, v_next - v_solved, dt)
        joint_applied = joint_applied + speed_limit
    recorded = recorded._replace(
        actuator=applied(act.force, act.stiffness, act.damping),
        joint=joint_applied, limit=applied(*joint.limit), velocity_limit=speed_limit,
        sensors=readings(model, forces, state, a, terms, wrench))
    return (State(integrate(model, q, v_next, dt), v_next, state.t + dt, next_act(forces, state, act.act_dot, dt)),
            recorded)


def _semi_implicit_step(model, forces, state, control, f_ext, dt):
    a, recorded, terms = _explicit_acceleration(model, forces, state.q, state.v, control, f_ext, state.act, dt)
    recorded = _explicit_readings(model, forces, state, a, terms, recorded)
    v_next = state.v + dt * a
    act_dot = terms.act.act_dot
    return (State(integrate(model, state.q, v_next, dt), v_next, state.t + dt, next_act(forces, state, act_dot, dt)),
            recorded)


def _rk4_step(model, forces, state, control, f_ext, dt):
    q, v = state.q, state.v

    def stage(xi, w):
        a, rec, terms = _explicit_acceleration(model, forces, integrate(model, q, xi), w, control, f_ext,
                                               state.act, step_dt=dt)
        return chart_rate(model, xi, w), a, (rec, terms)

    zero = jnp.zeros_like(v)
    k1 = stage(zero, v)
    k2 = stage(0.5 * dt * k1[0], v + 0.5 * dt * k1[1])
    k3 = stage(0.5 * dt * k2[0], v + 0.5 * dt * k2[1])
    k4 = stage(dt * k3[0], v + dt * k3[1])
    xi = dt / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0])
    v_next = v + dt / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1])
    recorded, terms = k1[2]
    recorded = _explicit_readings(model, forces, state, k1[1], terms, recorded)
    return (State(integrate(model, q, xi), v_next, state.t + dt, next_act(forces, state, terms.act.act_dot, dt)),
            recorded)


_STEPPERS = {"implicit": _implicit_step, "semi_implicit": _semi_implicit_step, "rk4": _rk4_step}


def _with_rigid_contact(stepper):
    """``stepper`` without contact, then the rigid contact impulses (:func:`rigid_contact_step`)."""

    def rigid_step(model, forces, state, control, f_ext, dt):
        free, recorded = stepper(model, dataclasses.replace(forces, contact=None), state, control, f_ext, dt)
        new, force = rigid_contact_step(model, forces.contact, state, free.v, dt)
        return State(new.q, new.v, new.t, free.act), recorded._replace(contact=force)

    return rigid_step


def advance(model: Model, forces: Forces, state: State, control, f_ext, dt, integrator: str,
            substeps: int) -> tuple[State, StepForces]:
    """One step of ``dt`` in ``substeps`` equal substeps (checked arguments); returns the new
    state and the forces averaged over the substeps.

    In reverse mode the step is rematerialised (``jax.checkpoint``): it keeps for the reverse
    pass its inputs and, of each forward-dynamics solve, the acceleration and the Riccati
    quantities (:data:`~sodyn.algorithms.articulated.FACTORS`), and recomputes kinematics and
    force laws there.  A scan of steps (:func:`~sodyn.simulate.rollout`, or a ``lax.scan`` of
    :func:`step`) then stores a few arrays per step rather than each of a step's many small
    intermediates, which costs more time to write and read than recomputing them.

    The model and the forces' parameters are closed over rather than passed in, so that those
    known when the step is traced stay concrete inside the rematerialised function and the
    terms they zero are skipped (:func:`~sodyn.simulate.joint_forces.may_be_nonzero`)."""

    def run(state, control, f_ext, dt):
        return _advance(model, forces, state, control, f_ext, dt, integrator, substeps)

    return _rematerialised(run)(state, control, f_ext, dt)


def _advance(model: Model, forces: Forces, state: State, control, f_ext, dt, integrator: str,
             substeps: int) -> tuple[State, StepForces]:
    stepper = _STEPPERS[integrator]
    if forces.joint.velocity_limits and integrator != "implicit":
        raise ValueError(f"JointForces(velocity_limits=True) needs integrator='implicit' (its brake is stiff), got "
                         f"{integrator!r}")
    if isinstance(forces.contact, RigidContact):
        if integrator == "rk4":
            raise ValueError("integrator 'rk4' does not take a RigidContact (impulses act once per step); "
                             "use integrator='implicit' or 'semi_implicit'")
        if forces.constraints is not None:
            raise ValueError("a RigidContact and loop closures (constraints=) in one step are not supported yet; "
                             "use the compliant GroundContact with constraints")
        stepper = _with_rigid_contact(stepper)
    if substeps == 1:
        return stepper(model, forces, state, control, f_ext, dt)
    h = dt / substeps

    def body(s, _):
        return stepper(model, forces, s, control, f_ext, h)

    state, recorded = jax.lax.scan(body, state, None, length=substeps)
    return state, jax.tree_util.tree_map(lambda x: jnp.mean(x, axis=0), recorded)


def _rematerialised(fn):
    """``fn`` rematerialised in reverse mode, keeping only the values named :data:`FACTORS`."""
    return jax.checkpoint(fn, prevent_cse=False, policy=jax.checkpoint_policies.save_only_these_names(FACTORS))


def check_step_options(integrator: str, substeps) -> None:
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
    if not isinstance(substeps, int) or isinstance(substeps, bool) or substeps < 1:
        raise ValueError(f"substeps must be a positive integer, got {substeps!r}")


def check_state_value(model: Model, state: State, forces: Forces | None = None) -> State:
    """``state`` checked and cast to the model's dtype (:meth:`State.initial`); its activations
    sized for ``forces.actuators`` (default: the model's)."""
    if not isinstance(state, State):
        raise ValueError(f"state must be an sodyn.State (State.initial(model, q, v)), got {type(state).__name__}")
    actuators = None if forces is None else forces.actuators
    if actuators is None:
        actuators = model.actuators
    return State.initial(model, state.q, state.v, state.t, state.act, actuators=actuators)


def step_and_forces(model: Model, state: State, control, dt, *, integrator: str = "implicit", contact=None,
                    actuators: Actuators | None = None, joint_forces: JointForces | None = None, f_ext=None,
                    substeps: int = 1, constraints: LoopClosures | None = None, checks: str = "cheap",
                    fluid=None, sensors=None, sensor_key=None) -> tuple[State, StepForces]:
    """:func:`step`, also returning the step's :class:`StepForces` (with ``sensors``: their
    readings, :mod:`sodyn.simulate.step_terms`; ``sensor_key``: a PRNG key for their noise)."""
    check_step_options(integrator, substeps)
    checks = check_checks_option(checks)
    check_dt(dt)
    forces = resolve_forces(model, actuators, joint_forces, contact, constraints, fluid, sensors)
    if sensor_key is not None:
        forces = dataclasses.replace(forces, sensor_key=sensor_key)
    state = check_state_value(model, state, forces)
    warn_if_stiff(model, forces, dt, substeps, integrator, stacklevel=2)
    control = check_control(model, forces, control, state.q.dtype)
    f_ext = check_f_ext(model, f_ext, state.q.dtype)
    dt = jnp.asarray(dt, state.q.dtype)
    if checks != "off":
        dt = checked_dt(dt)
        control = checked_controls(control)
        state = State(checked_quaternions(model, state.q), state.v, state.t, state.act)
    new, recorded = advance(model, forces, state, control, f_ext, dt, integrator, substeps)
    if checks == "full":
        watch = StateWatch(model, control.shape[0])
        new = watch.raise_if(new, watch.first_bad(1, None, new.q, new.v), first_step=0)
    return new, recorded


def step(model: Model, state: State, control, dt, *, integrator: str = "implicit", contact=None,
         actuators: Actuators | None = None, joint_forces: JointForces | None = None, f_ext=None,
         substeps: int = 1, constraints: LoopClosures | None = None, checks: str = "cheap", fluid=None) -> State:
    """Advance ``state`` by ``dt`` (module docstring for the integrators).

    ``control``: actuator controls ``(na,)`` when the model (or ``actuators``) has actuators,
    else generalised forces ``(nv,)``; ``None`` is zero.  ``contact``: a
    :class:`~sodyn.simulate.GroundContact` (compliant) or :class:`~sodyn.simulate.RigidContact`
    (impulses on the Delassus matrix); ``joint_forces``: limit and friction-loss
    parameters (:class:`JointForces`, on by default); ``f_ext`` ``(n_bodies, 6)``: external
    body-frame wrenches held over the step; ``substeps`` (static): equal substeps of
    ``dt / substeps``, the remedy when a :class:`~sodyn.simulate.StiffStepWarning` (given while
    the step is built, for concrete parameters) says that ``dt`` exceeds the stable-step estimate
    of the stiffest term (:func:`~sodyn.simulate.stable_step`); ``constraints``: loop closures
    (:class:`~sodyn.LoopClosures`) the step enforces (default: the model's own, ``model.closures``);
    ``fluid``: a :class:`~sodyn.simulate.fluid.Fluid` (default ``model.fluid``) whose body
    wrenches act over the step.

    ``checks`` (:mod:`sodyn.simulate.checks`, they hold under ``jax.jit``): ``"cheap"``
    (default) raises at run time on a non-positive or non-finite ``dt``, a zero or non-finite
    quaternion in ``state.q`` and a non-finite control; ``"full"`` also on a non-finite new
    state (naming the joint); ``"off"`` checks nothing.  ``state`` is cast to the model's dtype
    (:meth:`State.initial`).
    """
    return step_and_forces(model, state, control, dt, integrator=integrator, contact=contact, actuators=actuators,
                           joint_forces=joint_forces, f_ext=f_ext, substeps=substeps, constraints=constraints,
                           checks=checks, fluid=fluid, sensors=False)[0]  # nothing reads them


__all__ = ["INTEGRATORS", "Forces", "StepForces", "advance", "step", "step_and_forces"]
