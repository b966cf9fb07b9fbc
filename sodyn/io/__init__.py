"""Model import (Pinocchio models, URDF, MJCF), mesh files (:mod:`sodyn.io.meshes`), the robots
of example-robot-data (:mod:`sodyn.io.robot_data`) and conversions between the q/v conventions
of sodyn, Pinocchio and MuJoCo."""

from sodyn.io import meshes, robot_data
from sodyn.io.diagnostics import (
    IgnoredElementWarning,
    InertiaRepair,
    InertiaWarning,
    LoadWarning,
    SingularModelWarning,
    UnsupportedElementWarning,
)
from sodyn.io.meshes import load_mesh
from sodyn.io.mjcf import (
    EqualityConstraints,
    a_from_mujoco,
    a_to_mujoco,
    from_mujoco,
    load_mjcf,
    mass_matrix_from_mujoco,
    q_from_mujoco,
    q_to_mujoco,
    tau_from_mujoco,
    tau_to_mujoco,
    v_from_mujoco,
    v_to_mujoco,
    velocity_map_to_mujoco,
)
from sodyn.io.pinocchio import (
    from_pinocchio,
    q_from_pinocchio,
    q_to_pinocchio,
    v_from_pinocchio,
    v_to_pinocchio,
)
from sodyn.io.robot_data import ExampleRobot, example_robot, example_robots
from sodyn.io.urdf import CoupledURDF, MimicCoupling, load_urdf

__all__ = [
    "EqualityConstraints", "IgnoredElementWarning", "InertiaRepair", "InertiaWarning", "LoadWarning",
    "SingularModelWarning", "UnsupportedElementWarning",
    "CoupledURDF", "ExampleRobot", "MimicCoupling", "a_from_mujoco", "a_to_mujoco", "example_robot",
    "example_robots", "from_mujoco", "from_pinocchio", "load_mesh", "load_mjcf", "load_urdf",
    "mass_matrix_from_mujoco", "meshes", "q_from_mujoco", "q_from_pinocchio", "q_to_mujoco", "q_to_pinocchio",
    "robot_data", "tau_from_mujoco", "tau_to_mujoco", "v_from_mujoco", "v_from_pinocchio", "v_to_mujoco",
    "v_to_pinocchio", "velocity_map_to_mujoco",
]
