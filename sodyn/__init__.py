"""sodyn: differentiable rigid-body dynamics in JAX by the spatial operator algebra.

Every public function is a pure function of ``(model, q, ...)`` that works under
``jax.jit``, ``jax.vmap`` (over states and over model parameters) and ``jax.grad``.
How programs run is tuned apart from the math, in :mod:`sodyn.runtime`: :func:`sodyn.jit`
(``jax.jit`` plus XLA:CPU compile options), :func:`sodyn.batch` (a batch mapped in cache-sized
chunks and split across CPU cores) and :func:`sodyn.use_cpu_cores`.

Importing or calling sodyn changes no global state of JAX or XLA: no configuration, no
environment variable, no compile option of programs it does not compile itself, and no meaning
of ``jax.vmap`` or ``jax.jit``.  Tuning is asked for explicitly, through :mod:`sodyn.runtime`.
"""

from sodyn.algorithms.articulated import forward_dynamics
from sodyn.algorithms.centroidal import centroidal_inertia, centroidal_momentum, centroidal_momentum_matrix
from sodyn.algorithms.constrained import (
    ConstraintForces,
    constrained_forward_dynamics,
    constraint_jacobian,
    constraint_residual,
)
from sodyn.algorithms.frame_jacobians import (
    frame_acceleration,
    frame_jacobian,
    frame_jacobian_dot_times_v,
    frame_jacobians,
    frame_velocity,
)
from sodyn.algorithms.free_flying import (
    BaseInvariantDynamics,
    FreeFlyingInertias,
    base_invariant_forward_dynamics,
    body_operational_space_inertias,
    free_flying_inertias,
)
from sodyn.algorithms.hybrid import (
    HybridResult,
    UnderactuatedJacobians,
    hybrid_dynamics,
    underactuated_computed_torque,
    underactuated_jacobians,
)
from sodyn.algorithms.impulses import ImpactResult, contact_impulse, simultaneous_impulses
from sodyn.algorithms.inverse_dynamics import bias_forces, gravity_forces, inverse_dynamics
from sodyn.algorithms.inverse_mass_matrix import (
    ArticulatedBodyInertias,
    articulated_body_inertias,
    inverse_mass_matrix,
    inverse_mass_matrix_times,
    log_det_mass_matrix,
    log_det_mass_matrix_gradient,
)
from sodyn.algorithms.kinematics import (
    Kinematics,
    Poses,
    body_accelerations,
    body_velocities,
    center_of_mass,
    forward_kinematics,
    frame_pose,
    kinetic_energy,
    potential_energy,
)
from sodyn.algorithms.mass_matrix import composite_inertias, mass_matrix
from sodyn.algorithms.operational_space import (
    OperationalSpaceDynamics,
    dynamically_consistent_inverse,
    operational_space_bias,
    operational_space_compliance,
    operational_space_dynamics,
    operational_space_inertia,
)
from sodyn.algorithms.tasks import FrameTask, PointTask, task_jacobian, task_jdot_v
from sodyn.collision import collide, set_elevation, with_ground_plane, with_height_field
from sodyn.configuration import (
    difference,
    integrate,
    neutral_configuration,
    normalize_configuration,
    random_configuration,
)
from sodyn.constraints import LoopClosures
from sodyn.control import OSCOutput, osc_torque, posture_torque, task_pd_acceleration
from sodyn.io.diagnostics import (
    ApproximatedElementWarning,
    IgnoredElementWarning,
    InertiaWarning,
    InvalidLimitWarning,
    LoadWarning,
    SingularModelWarning,
    UnsupportedElementWarning,
)
from sodyn.io.mjcf import EqualityConstraints, load_mjcf
from sodyn.io.robot_data import ExampleRobot, example_robot, example_robots
from sodyn.io.urdf import load_urdf
from sodyn.joints import JointSpec
from sodyn.model import Model
from sodyn.model_builder import ModelBuilder
from sodyn.model_data import Actuators, Geoms, Keyframes
from sodyn.reduce import lock_joints
from sodyn.runtime import batch, jit, use_cpu_cores
from sodyn.simulate import (
    ContactModel,
    GroundContact,
    JointForces,
    RigidContact,
    Rollout,
    State,
    home_state,
    monte_carlo,
    motors,
    pd_servos,
    position_servos,
    rollout,
    servo_control,
    step,
)
from sodyn.simulate.store import StoreMismatchError

# submodules used as ``sodyn.<name>`` (``import sodyn`` is enough)
from sodyn import collision, contraction, io, models, runtime, sensors, simulate, spatial, terrain, viewer  # noqa: E402  isort: skip

__version__ = "0.1.0"

__all__ = [
    "ArticulatedBodyInertias", "JointSpec", "Kinematics", "Model", "ModelBuilder", "Poses",
    "articulated_body_inertias", "bias_forces", "body_accelerations", "body_velocities",
    "center_of_mass", "composite_inertias", "difference", "forward_dynamics",
    "forward_kinematics", "frame_acceleration", "frame_jacobian", "frame_jacobian_dot_times_v",
    "frame_jacobians", "frame_pose", "frame_velocity", "gravity_forces", "integrate",
    "inverse_dynamics", "inverse_mass_matrix", "inverse_mass_matrix_times", "kinetic_energy",
    "load_mjcf", "load_urdf", "log_det_mass_matrix", "mass_matrix", "neutral_configuration",
    "normalize_configuration", "potential_energy", "random_configuration",
    "contraction", "io", "models", "sensors", "simulate", "spatial", "viewer",
    # how programs run (sodyn.runtime)
    "batch", "jit", "use_cpu_cores", "runtime",
    # operational space, impulses, control
    "FrameTask", "ImpactResult", "OSCOutput", "OperationalSpaceDynamics", "PointTask",
    "contact_impulse", "dynamically_consistent_inverse", "log_det_mass_matrix_gradient",
    "operational_space_bias", "operational_space_compliance", "operational_space_dynamics",
    "operational_space_inertia", "osc_torque", "posture_torque", "simultaneous_impulses",
    "task_jacobian", "task_jdot_v", "task_pd_acceleration",
    # simulation (sodyn.simulate)
    "ContactModel", "GroundContact", "JointForces", "Rollout", "State", "home_state", "monte_carlo", "motors",
    "pd_servos", "position_servos", "rollout", "servo_control", "step",
    # collision between geoms (sodyn.collision)
    "collide", "collision", "with_ground_plane",
    # terrain (sodyn.terrain: height fields from parameters)
    "set_elevation", "terrain", "with_height_field",
    "RigidContact",
    # constrained, prescribed-motion and free-flying dynamics, centroidal momentum
    "BaseInvariantDynamics", "ConstraintForces", "FreeFlyingInertias", "HybridResult", "LoopClosures",
    "UnderactuatedJacobians", "base_invariant_forward_dynamics", "body_operational_space_inertias",
    "centroidal_inertia", "centroidal_momentum", "centroidal_momentum_matrix", "constrained_forward_dynamics",
    "constraint_jacobian", "constraint_residual", "free_flying_inertias", "hybrid_dynamics",
    "underactuated_computed_torque", "underactuated_jacobians",
    # loading real robots
    "Actuators", "ApproximatedElementWarning", "EqualityConstraints", "Geoms", "IgnoredElementWarning",
    "InertiaWarning", "InvalidLimitWarning", "Keyframes", "LoadWarning", "SingularModelWarning",
    "UnsupportedElementWarning", "lock_joints",
    "ExampleRobot", "example_robot", "example_robots",
    # Monte Carlo stores (sodyn.simulate.store)
    "StoreMismatchError",
]
