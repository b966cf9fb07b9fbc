"""What a step is given and what it records: the :class:`Forces` acting on the model (resolved
from a step's keyword arguments and the model's own data), the force terms at a state
(:func:`step_terms`), and the :class:`StepForces` a step returns, sensor readings included.

Besides actuators, joint forces (with the passive forces of the model's fixed tendons,
:mod:`sodyn.simulate.tendons`: in ``joint``, their limits in ``limit``) and contact, a step
applies the model's fluid forces
(:class:`~sodyn.simulate.fluid.Fluid`, body wrenches at the start of the step, held over it)
and enforces its loop closures (:class:`~sodyn.LoopClosures`, e.g. an MJCF file's equality
constraints); it reads the sensors (:class:`~sodyn.sensors.Sensors`) at the step's start state
with the step's acceleration and forces, as MuJoCo's ``mj_step`` leaves ``sensordata``: the
actuator forces before the implicit correction (MuJoCo's ``actuator_force``,
``qfrc_actuator``), the contact wrenches the step applied.  The force and torque sensors see
every body wrench, the fluid's included: MuJoCo applies fluid forces as generalised forces, so
its ``cfrc_int``, and its force and torque sensors, leave them out.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from sodyn.constraints import LoopClosures
from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.sensor_readings import sensor_readings
from sodyn.sensors import Sensors
from sodyn.simulate.actuation import ActuatorTerms, actuator_forces, control_size, next_activation
from sodyn.simulate.contact import CompliantContact, ContactTerms, contact_terms
from sodyn.simulate.fluid import Fluid, fluid_wrenches
from sodyn.simulate.joint_forces import JointForces, JointTerms, joint_forces
from sodyn.simulate.rigid_contact import RigidContact
from sodyn.simulate.state import State
from sodyn.simulate.tendons import with_tendon_forces


class StepForces(NamedTuple):
    """Forces of a step: ``actuator`` and ``joint`` generalised forces ``(nv,)`` (``joint``:
    limits, friction loss, springs and ``−damping ⊙ v``; ``"implicit"``: as the step applied
    them, linearized at its end, ``τ − dt K v⁺ − C (v⁺ − v)``; explicit integrators: at the
    start), the world-frame ``contact`` force on body 2 of each contact slot ``(nc, 3)``
    (``None`` without contact): the force the step applied (``"implicit"``: the law linearized
    at the end of the step; explicit integrators: at the start; rigid contact: the impulse over
    ``dt``), the loop closures' joint-space force ``G_c* λ`` ``(nv,)`` (``None`` without them),
    the joint- and tendon-limit share of ``joint`` as ``limit`` ``(nv,)``, the joint velocity
    limits' share of ``joint`` as ``velocity_limit`` ``(nv,)`` (``None`` without
    ``JointForces(velocity_limits=True)``): their brake as applied plus the force of the clip,
    ``𝓜(q) (v⁺ − v_s) / dt`` with ``v_s`` the solved and ``v⁺`` the clipped end-of-step velocity
    (armature included; it acts on every dof the mass matrix couples to a clipped one), so that
    ``actuator + joint`` balances the clipped step's momentum change as without the clip, and
    the ``sensors``' readings ``(total_dim,)`` (``None`` without sensors; module docstring)."""

    actuator: jax.Array
    joint: jax.Array
    contact: jax.Array | None
    constraint: jax.Array | None = None
    limit: jax.Array | None = None
    sensors: jax.Array | None = None
    velocity_limit: jax.Array | None = None


class Forces(eqx.Module):
    """What acts on the model besides gravity: ``actuators`` (``None``: the model's own when
    it has some, else the control is the generalised force), joint ``limits`` parameters
    (:class:`JointForces`), ``contact`` (a :class:`~sodyn.simulate.GroundContact`, a
    :class:`~sodyn.simulate.RigidContact` or ``None``), loop ``constraints``
    (:class:`~sodyn.LoopClosures` or ``None``), the ``fluid`` and the ``sensors`` a step reads
    (``sensor_key``: the PRNG key of their noise for this step, ``None``: no noise)."""

    actuators: Actuators | None
    joint: JointForces
    contact: CompliantContact | RigidContact | None
    constraints: LoopClosures | None = None
    fluid: Fluid | None = None
    sensors: Sensors | None = None
    sensor_key: jax.Array | None = None


def _checked(value, kind, what: str, name: str):
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"{name} must be {what} or None, got {type(value).__name__}")
    return value


def resolve_forces(model: Model, actuators=None, joint_forces: JointForces | None = None, contact=None,
                   constraints=None, fluid=None, sensors=None) -> Forces:
    """The :class:`Forces` of a step's keyword arguments, ``None`` filled in with the model's
    own actuators, loop closures (``model.closures``), fluid and sensors, and the default
    :class:`JointForces` (``sensors=False``: read none)."""
    if actuators is None and len(model.actuators):
        actuators = model.actuators
    _checked(actuators, Actuators, "an sodyn.Actuators value", "actuators")
    if joint_forces is None:
        with jax.ensure_compile_time_eval():   # concrete defaults, also under jit (step_size reads them)
            joint_forces = JointForces()
    _checked(joint_forces, JointForces, "a JointForces value", "joint_forces")
    _checked(contact, (CompliantContact, RigidContact), "a GroundContact, a ContactModel, a RigidContact", "contact")
    constraints = _checked(model.closures if constraints is None else constraints, LoopClosures,
                           "sodyn.LoopClosures", "constraints")
    fluid = _checked(model.fluid if fluid is None else fluid, Fluid, "a sodyn.simulate.fluid.Fluid", "fluid")
    if sensors is False:                   # the caller reads no sensors
        sensors = None
    else:
        sensors = _checked(model.sensors if sensors is None else sensors, Sensors, "sodyn.sensors.Sensors",
                           "sensors")
    if sensors is not None and isinstance(contact, RigidContact):
        raise ValueError("sensors with a RigidContact are not supported yet (its impulses are not body wrenches); "
                         "use the compliant contact, or sensors=sodyn.sensors.Sensors.empty()")
    return Forces(actuators, joint_forces, contact, constraints, fluid, sensors if sensors and len(sensors) else None)


def check_dt(dt) -> None:
    """A concrete ``dt`` must be positive and finite: raise now.  (A traced one is checked at run
    time by :func:`~sodyn.simulate.checks.checked_dt` unless ``checks="off"``.)"""
    try:
        value = float(dt)
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return
    if not value > 0 or value == float("inf"):
        raise ValueError(f"dt must be a positive, finite time step, got {dt!r}")


def check_control(model: Model, forces: Forces, control, dtype) -> jax.Array:
    """``control`` as an ``(nu,)`` array (zeros for ``None``)."""
    nu = control_size(model, forces.actuators)
    if control is None:
        return jnp.zeros(nu, dtype)
    u = jnp.asarray(control, dtype)
    if u.shape != (nu,):
        what = "the number of actuators" if forces.actuators is not None else "nv (generalised forces)"
        raise ValueError(f"control must have shape ({nu},) ({what}), got {u.shape}")
    return u


class Terms(NamedTuple):
    """The force terms of a step at its start state (:func:`step_terms`): ``f_ext`` all body
    wrenches (the caller's, the fluid's and the contacts'), ``f_applied`` those but the
    contacts'."""

    act: ActuatorTerms
    joint: JointTerms
    contact: ContactTerms | None
    f_ext: jax.Array | None
    f_applied: jax.Array | None
    recorded: StepForces


def step_terms(model: Model, forces: Forces, q, v, control, f_ext, dt, activation, step_dt=None) -> Terms:
    """Actuator, joint, fluid and contact terms at ``(q, v)`` and ``activation``; contact
    linearized when ``dt`` is given (``step_dt``: the step, for ``act_early`` actuators)."""
    act = actuator_forces(model, forces.actuators, q, v, control, activation, step_dt if dt is None else dt)
    joint = with_tendon_forces(model, forces.joint, joint_forces(model, forces.joint, q, v), q, v)
    if forces.fluid is not None:
        fluid = fluid_wrenches(model, forces.fluid, q, v)
        f_ext = fluid if f_ext is None else f_ext + fluid
    applied, contact = f_ext, None
    if forces.contact is not None:
        contact = contact_terms(model, forces.contact, q, v, dt)
        f_ext = contact.f_ext if f_ext is None else f_ext + contact.f_ext
    recorded = StepForces(act.force, joint.force - model.damping.astype(q.dtype) * v,
                          None if contact is None else contact.force, limit=joint.limit[0])
    return Terms(act, joint, contact, f_ext, applied, recorded)


def next_act(forces: Forces, state: State, act_dot, dt) -> jax.Array:
    """The activations after the step (:func:`~sodyn.simulate.actuation.next_activation`)."""
    if forces.actuators is None:
        return state.act
    actuators = jax.tree_util.tree_map(lambda x: x.astype(state.q.dtype), forces.actuators)
    return next_activation(actuators, state.act, act_dot, dt)


def readings(model: Model, forces: Forces, state: State, a, terms: Terms, contact_wrench) -> jax.Array | None:
    """The sensors' readings of a step (module docstring): ``contact_wrench (n_bodies, 6)`` is
    the contacts' body wrenches the step applied (``None`` without contact)."""
    if forces.sensors is None:
        return None
    dtype = state.q.dtype
    if contact_wrench is None:
        contact_wrench = jnp.zeros((model.n_bodies, 6), dtype)
    f_all = contact_wrench if terms.f_applied is None else terms.f_applied + contact_wrench
    return sensor_readings(model, forces.sensors, state.q, state.v, a, actuator_force=terms.act.actuator_force,
                           joint_actuator_force=terms.act.force, f_ext=f_all, contact_wrench=contact_wrench,
                           t=state.t, key=forces.sensor_key)


__all__ = ["Forces", "StepForces", "Terms", "check_control", "check_dt", "next_act", "readings", "resolve_forces",
           "step_terms"]
