"""The interactive view (``sodyn.viewer.interactive``): the scene description built headlessly,
the viser server it feeds (on localhost), and a screenshot of it through headless Chromium
where the machine has one."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import warnings

import numpy as np
import pytest

import sodyn as sd
from sodyn import viewer
from sodyn.io.visuals import load_visuals


@pytest.fixture(scope="module")
def solo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            robot = sd.example_robot("solo12")
        except FileNotFoundError:
            pytest.skip("example-robot-data is not installed")
        model = robot.load(floating_base=True)
        scene = viewer.Scene.build(model, load_visuals(robot), max_triangles=8000)
    q = np.array(model.q_neutral, np.float64)
    q[2] = 0.35
    qs = np.repeat(q[None], 20, axis=0)
    qs[:, 7] = np.linspace(-0.5, 0.5, 20)  # one hip swings
    qs[:, 0] = np.linspace(0.0, 0.2, 20)
    return model, scene, qs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scene_description_of_a_trajectory_and_samples(solo):
    model, scene, qs = solo
    samples = np.repeat(qs[None], 5, axis=0)
    samples[:, :, 1] += np.arange(5)[:, None] * 0.3
    d = viewer.interactive_scene(scene, qs, samples=samples, dt=0.01)
    per_part = sum(len(np.unique(np.round(p.face_rgba, 3), axis=0)) for p in scene.parts)
    assert len([m for m in d.meshes if m.name.startswith("/robot/")]) == per_part
    assert len([m for m in d.meshes if m.name.startswith("/samples/")]) == per_part
    assert sum(len(m.faces) for m in d.meshes) == 2 * scene.n_triangles  # every triangle, once per set
    assert d.n_steps == 20 and np.allclose(d.times, 0.01 * np.arange(20)) and d.n_samples == 5
    assert d.positions.shape == (20, model.n_bodies + 1, 3) and d.wxyz.shape == (20, model.n_bodies + 1, 4)
    assert d.sample_positions.shape == (20, 5, model.n_bodies + 1, 3)
    r, p = viewer.body_poses(model, qs)
    np.testing.assert_allclose(d.positions, p)
    from sodyn.rotations import quat_to_matrix

    k = model.body_id("FL_UPPER_LEG")
    for t in (0, 7, 19):
        np.testing.assert_allclose(quat_to_matrix(d.wxyz[t, k]), r[t, k], atol=1e-12)
    np.testing.assert_allclose(d.sample_positions[:, 3, :-1, 1] - d.positions[:, :-1, 1], 0.9, atol=1e-12)
    assert d.ground is not None and np.linalg.norm(d.eye - d.look_at) > 0.3
    single = viewer.interactive_scene(scene, qs[0])
    assert single.n_steps == 1 and single.sample_positions is None
    with pytest.raises(ValueError, match="same number of time steps"):
        viewer.interactive_scene(scene, qs, samples=samples[:, :3])
    with pytest.raises(ValueError, match="needs qs, samples or both"):
        viewer.interactive_scene(scene)


def test_viser_server_shows_the_trajectory_and_follows_the_slider(solo):
    pytest.importorskip("viser")
    model, scene, qs = solo
    view = viewer.show(scene, qs, samples=np.repeat(qs[None, :, :], 3, axis=0), dt=0.01, port=_free_port())
    try:
        d = view.description
        assert set(view.handles) == {m.name for m in d.meshes} and view.slider is not None
        assert view.url.startswith("http://127.0.0.1:")
        node = next(m for m in d.meshes if m.name.startswith("/robot/") and m.body == model.body_id("FL_UPPER_LEG"))
        batched = next(m for m in d.meshes if m.name.startswith("/samples/"))
        view.slider.value = 12
        deadline = time.time() + 5
        while time.time() < deadline and not np.allclose(view.handles[node.name].position, d.positions[12, node.body]):
            time.sleep(0.02)
        np.testing.assert_allclose(view.handles[node.name].position, d.positions[12, node.body], atol=1e-6)
        np.testing.assert_allclose(view.handles[batched.name].batched_positions,
                                   d.sample_positions[12, :, batched.body], atol=1e-6)
    finally:
        view.close()


def _chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium-headless-shell", "chromium", "chromium-browser",
                                               "google-chrome")) if p), None)


@pytest.mark.slow
def test_headless_browser_screenshot_shows_the_robot(solo, tmp_path):
    """The viser page in headless Chromium (software WebGL): the robot's pixels are there."""
    pytest.importorskip("viser")
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium-headless-shell)")
    from PIL import Image

    model, scene, qs = solo
    view = viewer.show(scene, qs, dt=0.01, port=_free_port())
    shot = tmp_path / "viser.png"
    try:
        subprocess.run([browser, "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                        "--window-size=900,700", "--virtual-time-budget=15000", f"--screenshot={shot}", view.url],
                       capture_output=True, timeout=180, check=False)
    finally:
        view.close()
    image = np.asarray(Image.open(shot).convert("RGB"), np.int16)
    centre = image[200:560, 250:650]
    grey = (np.abs(centre - centre.mean(axis=-1, keepdims=True)).max(axis=-1) < 12) & (centre.mean(axis=-1) < 225)
    assert grey.mean() > 0.05, grey.mean()  # the robot's grey shell, 0.07–0.1 (the grid alone: about 0.025)
    del model
