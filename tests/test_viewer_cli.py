"""``sodyn view`` and the meshes of ``sodyn simulate --plot/--gif`` (``sodyn.cli_view``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sodyn.cli import main

pytest.importorskip("matplotlib")

#: A two-link pendulum whose links have visual shapes (box, cylinder, sphere) and a material.
URDF = """<?xml version="1.0"?>
<robot name="shown">
  <material name="orange"><color rgba="0.9 0.5 0.1 1"/></material>
  <link name="base"><visual><geometry><box size="0.3 0.3 0.05"/></geometry></visual></link>
  <link name="upper">
    <inertial><origin xyz="0 0 -0.25"/><mass value="1"/>
      <inertia ixx="0.02" iyy="0.02" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 -0.25"/><geometry><cylinder radius="0.03" length="0.5"/></geometry>
      <material name="orange"/></visual>
  </link>
  <link name="lower">
    <inertial><origin xyz="0 0 -0.2"/><mass value="0.5"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 -0.2"/><geometry><box size="0.04 0.04 0.4"/></geometry></visual>
    <visual><origin xyz="0 0 -0.42"/><geometry><sphere radius="0.05"/></geometry>
      <material name="tip"><color rgba="0.2 0.3 0.9 1"/></material></visual>
  </link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 1.2"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0 0 -0.5"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
</robot>
"""


@pytest.fixture()
def urdf(tmp_path):
    path = tmp_path / "shown.urdf"
    path.write_text(URDF)
    return str(path)


def _image(path):
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB")), getattr(im, "n_frames", 1)


def test_view_writes_a_still_and_an_animation(urdf, tmp_path, capsys):
    png, gif = str(tmp_path / "pose.png"), str(tmp_path / "swing.gif")
    assert main(["view", urdf, "--png", png]) == 0
    image, _ = _image(png)
    assert image.shape == (640, 800, 3)
    orange = (image[..., 0] > 150) & (image[..., 1] > 60) & (image[..., 1] < 150) & (image[..., 2] < 80)
    blue = (image[..., 2] > 120) & (image[..., 0] < 90)
    assert orange.sum() > 500 and blue.sum() > 100  # the URDF's materials
    traj = tmp_path / "swing.npz"
    qs = np.stack([np.linspace(0, 1.5, 30), np.linspace(0, -1.0, 30)], axis=1)
    np.savez(traj, qs=qs, dt=0.05)
    assert main(["view", urdf, "--traj", str(traj), "--gif", gif, "--max-frames", "6", "--size", "640x480"]) == 0
    frames, n = _image(gif)
    assert n == 7 and frames.shape == (480, 640, 3)  # every fifth row, and the last
    assert main(["view", urdf, "--traj", str(traj), "--gif", gif]) == 2  # exists: only with --force
    assert "--force" in capsys.readouterr().err
    assert main(["view", urdf, "--gif", str(tmp_path / "x.gif")]) == 2  # nothing to animate
    assert "--traj" in capsys.readouterr().err
    assert main(["view", "no_such_robot_anywhere", "--png", str(tmp_path / "y.png")]) == 2


def test_view_overlays_the_samples_of_a_simulate_run(urdf, tmp_path):
    out, png = tmp_path / "run.npz", str(tmp_path / "samples.png")
    rng = np.random.default_rng(0)
    np.savez(out, final_q=rng.uniform(-1, 1, (16, 2)), dt=0.01)
    assert main(["view", urdf, "--traj", str(out), "--png", png]) == 0
    image, _ = _image(png)
    assert np.mean(np.any(image < 240, axis=-1)) > 0.05


def test_simulate_plot_and_gif_draw_the_meshes(urdf, tmp_path):
    plot, gif = str(tmp_path / "run.png"), str(tmp_path / "run.gif")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(["simulate", urdf, "--batch", "4", "--steps", "30", "--dt", "0.01", "--plot", plot, "--gif", gif])
    assert status == 0
    image, _ = _image(plot)
    orange = (image[..., 0] > 150) & (image[..., 1] > 60) & (image[..., 1] < 150) & (image[..., 2] < 80)
    assert orange.sum() > 200  # the meshes' colour in the pose panel, not a stick figure's blue
    frames, n = _image(gif)
    assert n >= 10 and frames.shape[1] >= 640
