"""Holding a pose (:mod:`sodyn.simulate.standing`, ``sodyn simulate --stand``): servo gains from
the joints' inertia, the static equilibrium of a pose on the ground, robots of example-robot-data
standing at their SRDF poses from the command line, and the fixed-base hint."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.cli import main
from sodyn.simulate.standing import on_the_ground, servo_gains, static_equilibrium, support_points

jax.config.update("jax_enable_x64", True)


def _robot(name: str, floating_base: bool) -> sd.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sd.LoadWarning)
        model = sd.example_robot(name).load(floating_base=floating_base).astype(jnp.float64)
    return sd.with_ground_plane(model) if floating_base else model


def test_a_fixed_base_joints_gains_come_from_the_mass_matrix_diagonal():
    """Fixed base: ``k_p = (2π f)² (𝓜_jj + armature)`` and ``k_v = 2 ζ sqrt(k_p m)``, the joint's
    subtree inertia about its axis being the mass matrix's diagonal (the Panda at its pose)."""
    model = _robot("panda", floating_base=False)
    q = model.keyframes["default"][0]
    kp, kv = servo_gains(model, q, frequency=4.0, damping_ratio=0.7)
    m = np.diagonal(np.asarray(sd.mass_matrix(model, q))) + np.asarray(model.armature)
    np.testing.assert_allclose(kp, (2 * np.pi * 4.0) ** 2 * m, rtol=1e-10)
    np.testing.assert_allclose(kv, 2 * 0.7 * np.sqrt(kp * m), rtol=1e-10)


def test_a_standing_robots_feed_forward_and_support_forces_balance_gravity():
    """Solo12 standing on the ground: ``g(q) = Sᵀ τ + J_cᵀ f_c`` to round-off, the support forces
    carry the weight, and a stance leg's gains are those of the rest of the robot turning about
    it (larger than its own subtree's)."""
    model = _robot("solo12", floating_base=True)
    q = on_the_ground(model, model.keyframes["standing"][0])
    bodies, points = support_points(model, q)
    assert set(model.body_names[b] for b in bodies) == {f"{leg}_LOWER_LEG" for leg in ("FL", "FR", "HL", "HR")}
    tau, forces = static_equilibrium(model, q, (bodies, points))
    g = np.asarray(sd.gravity_forces(model, q))
    from sodyn.simulate.standing import _point_jacobians

    jac = _point_jacobians(model, jnp.asarray(q), bodies, points).reshape(-1, model.nv)
    np.testing.assert_allclose(tau + jac.T @ forces.reshape(-1), g, atol=1e-9)
    assert np.all(tau[:6] == 0)
    assert forces[:, 2].sum() == pytest.approx(9.81 * float(jnp.sum(model.mass)), rel=1e-9)
    stance, own = servo_gains(model, q, support=tuple(bodies))[0], servo_gains(model, q)[0]
    assert np.all(stance > own)


def _stand(tmp_path, robot: str, pose: str, seconds: float):
    out = tmp_path / "run.npz"
    steps = int(round(seconds / 1e-3))
    assert main(["simulate", robot, "--floating-base", "--stand", pose, "--batch", "1", "--steps", str(steps),
                 "--float64", "--out", str(out)]) == 0
    return np.load(out)


def _check_held(data, tolerance: float):
    """Finite, the base within 1 cm of its start height, every joint within ``tolerance``."""
    assert np.all(data["finite"])
    q0, q1 = data["initial_q"][0], data["final_q"][0]
    assert abs(q1[2] - q0[2]) < 0.01
    assert np.max(np.abs(q1[7:] - q0[7:])) < tolerance


def test_solo12_stands_at_its_srdf_pose_from_the_command_line(tmp_path, capsys):
    """``sodyn simulate solo12 --floating-base --stand standing`` for 5 s: the robot holds the
    pose (base height within 1 cm, joints within 10 mrad)."""
    data = _stand(tmp_path, "solo12", "standing", 5.0)
    assert "holding keyframe 'standing'" in capsys.readouterr().out
    _check_held(data, 0.01)


@pytest.mark.slow
def test_talos_stands_half_sitting_from_the_command_line(tmp_path):
    """``sodyn simulate talos_reduced --floating-base --stand half_sitting`` for 5 s: as Solo12."""
    _check_held(_stand(tmp_path, "talos_reduced", "half_sitting", 5.0), 0.01)


def test_a_legged_urdf_loaded_with_a_fixed_base_gets_a_hint_and_an_unknown_pose_an_error(capsys):
    assert main(["info", "solo12"]) == 0
    assert "looks like a legged robot but is fixed to the world" in capsys.readouterr().out
    assert main(["info", "solo12", "--floating-base"]) == 0
    assert "looks like a legged robot" not in capsys.readouterr().out
    assert main(["simulate", "solo12", "--floating-base", "--stand", "crouching", "--batch", "1"]) == 2
    assert "--stand: model 'solo' has no pose 'crouching' (its keyframes: 'standing'" in capsys.readouterr().err
