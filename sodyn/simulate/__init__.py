"""Simulation: the :class:`State`, time steppers, actuators, joint limits and friction,
ground contact, rollouts and batched Monte Carlo.

* :func:`step` / :func:`step_and_forces`: one step (:mod:`~sodyn.simulate.stepping`);
* :func:`rollout`: many steps as one ``lax.scan`` (:mod:`~sodyn.simulate.rollout`);
* :func:`stable_step`, :class:`StiffStepWarning`: the implicit step's stable-step estimate
  (:mod:`~sodyn.simulate.step_size`);
* :class:`ContactModel` (the model's geoms against each other, :mod:`~sodyn.simulate.geom_contact`),
  :class:`GroundContact` (points against a plane, :mod:`~sodyn.simulate.ground`),
  :func:`contact_terms`: compliant contact with friction (:mod:`~sodyn.simulate.contact`);
* :class:`RigidContact`: rigid frictional contact, impulses from the Delassus matrix of the Ω
  recursions by projected Gauss–Seidel (:mod:`~sodyn.simulate.rigid_contact`);
* :func:`motors`, :func:`position_servos`, :func:`velocity_servos`, :func:`pd_servos` (with
  :func:`servo_control`), :func:`dc_motors` (:mod:`~sodyn.simulate.actuator_builders`) and
  :func:`actuator_forces` (:mod:`~sodyn.simulate.actuation`): controls and activations to forces;
* :class:`JointForces`: joint limits (bounded by ``limit_force_max``), friction loss, springs
  and gravity compensation (:mod:`~sodyn.simulate.joint_forces`);
* :class:`Fluid`, :func:`fluid_forces`: MuJoCo's inertia-box and ellipsoid fluid models
  (:mod:`~sodyn.simulate.fluid`); sensors are :mod:`sodyn.sensors`, read by every step
  (:mod:`~sodyn.simulate.step_terms`);
* :func:`hold_pose`: servos holding a pose with its static feed-forward
  (:mod:`~sodyn.simulate.standing`);
* :func:`monte_carlo`, :func:`home_state`, :class:`ParameterDistribution`: batched Monte Carlo
  over sampled states and parameters (:mod:`~sodyn.simulate.monte_carlo`).
"""

from sodyn.simulate.actuation import actuator_forces
from sodyn.simulate.actuator_builders import (
    dc_motors,
    motors,
    pd_servos,
    position_servos,
    servo_control,
    servo_indices,
    velocity_servos,
)
from sodyn.simulate.contact import ContactTerms, contact_terms, restitution_coefficient
from sodyn.simulate.fluid import Fluid, fluid_forces, fluid_wrenches
from sodyn.simulate.geom_contact import ContactModel
from sodyn.simulate.ground import GroundContact
from sodyn.simulate.joint_forces import JointForces, gravity_compensation, joint_forces, joint_potential_energy
from sodyn.simulate.monte_carlo import (
    MonteCarloResult,
    ParameterDistribution,
    home_sampler,
    home_state,
    log_uniform_scale,
    monte_carlo,
    normal_noise,
    randomize,
    uniform,
    uniform_scale,
)
from sodyn.simulate.rigid_contact import (
    RigidContact,
    RigidContactSolution,
    contact_jacobian,
    delassus_matrix,
    solve_rigid_contact,
)
from sodyn.simulate.rollout import Rollout, rollout
from sodyn.simulate.standing import hold_pose
from sodyn.simulate.state import State
from sodyn.simulate.step_size import StiffStepWarning, stable_step
from sodyn.simulate.stepping import INTEGRATORS, StepForces, step, step_and_forces

__all__ = [
    "RigidContact", "RigidContactSolution", "contact_jacobian", "delassus_matrix", "solve_rigid_contact",
    "actuator_forces", "dc_motors", "pd_servos", "servo_control", "servo_indices", "velocity_servos",
    "contact_terms", "gravity_compensation", "Fluid", "fluid_forces", "fluid_wrenches", "hold_pose",
    "ContactModel", "ContactTerms", "GroundContact", "home_sampler",
    "home_state",
    "INTEGRATORS", "joint_forces", "joint_potential_energy", "JointForces", "log_uniform_scale", "monte_carlo",
    "MonteCarloResult", "motors", "normal_noise", "ParameterDistribution", "position_servos", "randomize",
    "restitution_coefficient", "Rollout", "rollout", "stable_step", "State", "step", "step_and_forces", "StepForces",
    "StiffStepWarning", "uniform", "uniform_scale",
]
