"""The mesh viewer (``sodyn.viewer``) and the visual-geometry loader (``sodyn.io.visuals``):
images of real robots with their meshes, Monte Carlo overlays and tiles, animations written
atomically, and the fallbacks (collision geoms, skeleton, stick figures)."""

from __future__ import annotations

import functools
import importlib.util
import os
import warnings

import numpy as np
import pytest

import sodyn as sd
from sodyn import viewer
from sodyn.io.visuals import load_visuals

pytest.importorskip("matplotlib")
pytest.importorskip("PIL")

BACKGROUND = 255


def _humanoid_path() -> str:
    spec = importlib.util.find_spec("mujoco.mjx")
    if spec is None:
        pytest.skip("mujoco-mjx (the MJX test humanoid) is not installed")
    return os.path.join(os.path.dirname(spec.origin), "test_data", "humanoid", "humanoid.xml")


@functools.cache
def robot(name: str):
    """(model, scene, home q) of a robot, loaded once per test session."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loaders' notes on the models, not the viewer's business
        if name == "humanoid":
            path = _humanoid_path()
            model, visuals = sd.load_mjcf(path), load_visuals(path)
        else:
            try:
                r = sd.example_robot(name)
            except FileNotFoundError:
                pytest.skip("example-robot-data is not installed")
            model, visuals = r.load(floating_base=name != "panda"), load_visuals(r)
    scene = viewer.Scene.build(model, visuals)
    return model, scene, viewer.on_ground(scene, model.q_neutral)  # the lowest vertex at z = 0


def silhouette(image: np.ndarray) -> np.ndarray:
    """The pixels that are not the white background."""
    return np.any(image[..., :3] < BACKGROUND - 8, axis=-1)


# ---------------------------------------------------------------------------
# visuals
# ---------------------------------------------------------------------------


def test_urdf_visuals_bind_to_link_frames_with_file_colours():
    model, scene, _ = robot("panda")
    visuals = load_visuals(sd.example_robot("panda"))
    assert {v.kind for v in visuals} == {"mesh"} and all(v.frame in model.frame_names for v in visuals)
    link1 = next(v for v in visuals if v.frame == "panda_link1")
    assert link1.n_triangles > 1000 and link1.face_rgba is not None  # COLLADA materials read per face
    colours = np.unique(np.round(np.concatenate([v.face_rgba for v in visuals if v.face_rgba is not None]), 2), axis=0)
    assert len(colours) >= 2  # white shells, dark rings
    assert scene.source == "visual" and scene.n_triangles <= viewer.DEFAULT_MAX_TRIANGLES + 100
    assert {p.body for p in scene.parts} >= set(range(model.n_bodies - 2))


def test_mjcf_visuals_are_the_drawn_geoms_and_the_floor_is_the_ground():
    model, scene, _ = robot("humanoid")
    visuals = load_visuals(_humanoid_path())
    assert "plane" in {v.kind for v in visuals} and "capsule" in {v.kind for v in visuals}
    assert scene.ground is not None and np.allclose(scene.ground[0], [0, 0, 1])
    assert all(v.frame is None or v.frame in model.frame_names for v in visuals)
    assert load_visuals(_humanoid_path(), groups=()) == ()


def test_visuals_of_another_model_are_refused():
    model = sd.models.cart_pole()
    with pytest.raises(ValueError, match="frames that model 'cart_pole' lacks"):
        viewer.Scene.build(model, load_visuals(sd.example_robot("panda")))


# ---------------------------------------------------------------------------
# still images of real robots
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["panda", "solo12", "talos_full_v2", "humanoid"])
def test_robot_image_with_meshes(name, tmp_path):
    """A 800 x 640 image of the robot's meshes: the robot's silhouette fills a sane share of it
    (not a few pixels, not the whole frame), shaded (many grey levels), and it is saved."""
    model, scene, q = robot(name)
    image = viewer.render(scene, q, ground=False, title=name)
    assert image.shape == (640, 800, 4) and image.dtype == np.uint8
    mask = silhouette(image)
    mask[:40, :200] = False  # the title
    rows, cols = np.nonzero(mask)
    assert 0.04 < mask.mean() < 0.7, mask.mean()
    assert np.ptp(rows) > 0.6 * 640 or np.ptp(cols) > 0.6 * 800  # the camera fits the robot
    assert len(np.unique(image[mask][:, :3].mean(axis=1) // 8)) > 12  # shaded, not flat
    with_ground = viewer.render(scene, q)
    assert silhouette(with_ground).mean() > mask.mean()  # the ground and the shadow
    path = viewer.save_image(tmp_path / f"{name}.png", with_ground)
    from PIL import Image

    assert Image.open(path).size == (800, 640)


def test_on_ground_puts_the_lowest_vertex_on_the_plane():
    model, scene, q = robot("solo12")
    r, p = viewer.body_poses(model, q[None])
    assert abs(np.min(scene.world_vertices(r[0], p[0])[0][:, 2])) < 1e-9
    lifted = viewer.on_ground(scene, q, height=0.5)
    np.testing.assert_allclose(lifted - q, np.eye(model.nq)[2] * 0.5, atol=1e-12)
    arm, arm_scene, arm_q = robot("panda")
    np.testing.assert_array_equal(viewer.on_ground(arm_scene, arm_q), arm_q)  # a fixed base stays


def test_render_checks_its_input():
    model, scene, q = robot("solo12")
    with pytest.raises(ValueError, match="shape"):
        viewer.render(scene, q[:-1])
    with pytest.raises(ValueError, match="non-finite"):
        viewer.render(scene, np.where(np.arange(model.nq) == 8, np.nan, q))
    with pytest.raises(ValueError, match="fov"):
        viewer.Camera(fov=0.0)


# ---------------------------------------------------------------------------
# Monte Carlo samples, forces, animations
# ---------------------------------------------------------------------------


def _samples(model, q, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    qs = np.repeat(q[None], n, axis=0)
    qs[:, 7:] += 0.3 * rng.standard_normal((n, model.nq - 7))
    qs[:, :2] += 0.1 * rng.standard_normal((n, 2))
    return qs


def test_monte_carlo_samples_overlaid_and_tiled():
    model, scene, q = robot("solo12")
    qs = _samples(model, q, 12)
    one = viewer.render_samples(scene, qs[:1], ground=False)
    many = viewer.render_samples(scene, qs, ground=False)
    assert many.shape == (640, 800, 4)
    assert silhouette(many).sum() > 1.2 * silhouette(one).sum()  # the ghosts of the others
    ghost = silhouette(many) & ~silhouette(one)
    assert np.mean(many[ghost][:, :3]) > np.mean(one[silhouette(one)][:, :3])  # translucent: lighter
    tiles = viewer.render_samples(scene, qs, mode="tile", tile_size=(200, 160), ground=False)
    assert tiles.shape == (3 * 160, 4 * 200, 4)
    assert all(silhouette(tiles[r * 160:(r + 1) * 160, c * 200:(c + 1) * 200]).mean() > 0.02
               for r in range(3) for c in range(4))
    with pytest.raises(ValueError, match="mode"):
        viewer.render_samples(scene, qs, mode="grid")


def test_contact_force_arrows_are_drawn():
    model, scene, q = robot("solo12")
    feet = [model.frame_id(f"{leg}_FOOT") for leg in ("FL", "FR", "HL", "HR")]
    import jax

    points = np.asarray(jax.jit(sd.forward_kinematics)(model, q).frame.translation)[feet]
    forces = np.tile([0.0, 0.0, 40.0], (4, 1))
    plain = viewer.render(scene, q, ground=False)
    arrows = viewer.render(scene, q, ground=False, forces=(points, forces))
    red = (arrows[..., 0] > 180) & (arrows[..., 1] < 80) & (arrows[..., 2] < 80)
    assert red.sum() > 200 and ((plain[..., 0] > 180) & (plain[..., 1] < 80)).sum() == 0


BOX_ON_FLOOR = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>
  <body name="box" pos="0.1 0.2 0.05" euler="0 0 30"><freejoint/><geom type="box" size="0.05 0.05 0.05"/></body>
  </worldbody></mujoco>"""


def test_contact_model_arrows_start_at_the_slots_contact_points():
    """For a geom-pair ``ContactModel`` the arrows start at each slot's contact point, those of
    ``sd.collide`` for the same pairs, and carry the rollout's forces unchanged."""
    import jax
    import jax.numpy as jnp

    from sodyn.simulate import ContactModel

    model = sd.load_mjcf(BOX_ON_FLOOR)
    contact = ContactModel.from_model(model)
    qs = jnp.stack([jnp.asarray(model.q_neutral).at[2].add(dz) for dz in (0.0, -1e-3, 0.02)])
    forces = np.random.default_rng(0).normal(size=(3, len(contact), 3))
    points, arrows = viewer.contact_arrows(model, contact, qs, forces)
    want = np.asarray(jax.vmap(lambda q: sd.collide(model, q).position)(qs))
    np.testing.assert_allclose(points, want, atol=1e-12)
    np.testing.assert_array_equal(arrows, forces)


def test_gif_and_mp4_written_atomically(tmp_path, monkeypatch):
    """A GIF and an MP4 of a short trajectory, at least 640 px; an existing file survives a write
    that fails half way, and no temporary is left behind."""
    from PIL import Image

    model, scene, q = robot("solo12")
    qs = np.repeat(q[None], 12, axis=0)
    qs[:, 7:] += np.linspace(0, 0.6, 12)[:, None]
    gif = viewer.save_animation(scene, qs, tmp_path / "solo.gif", dt=0.02, fps=20)
    with Image.open(gif) as im:
        assert im.size == (640, 640) and im.n_frames == 12
    if importlib.util.find_spec("imageio_ffmpeg") is not None:
        mp4 = viewer.save_animation(scene, qs, tmp_path / "solo.mp4", dt=0.02)
        with open(mp4, "rb") as f:
            assert f.read(12)[4:8] == b"ftyp" and os.path.getsize(mp4) > 2000
    before = open(gif, "rb").read()
    listing = sorted(os.listdir(tmp_path))
    calls = []

    def failing(*args, **kwargs):  # the fifth frame fails, as a full disk would
        calls.append(1)
        if len(calls) == 5:
            raise OSError("disk full")

    monkeypatch.setattr("sodyn.viewer.animation.draw_frame", failing)
    with pytest.raises(OSError, match="disk full"):
        viewer.save_animation(scene, qs, gif, dt=0.02)
    assert open(gif, "rb").read() == before and sorted(os.listdir(tmp_path)) == listing
    with pytest.raises(ValueError, match=".gif or .mp4"):
        viewer.save_animation(scene, qs, tmp_path / "solo.avi")


def test_animation_follows_a_travelling_robot_and_titles_the_time():
    model, scene, q = robot("solo12")
    qs = np.repeat(q[None], 6, axis=0)
    qs[:, 0] += np.linspace(0.0, 3.0, 6)  # three metres: far more than its size
    frames = list(viewer.render_frames(scene, qs, dt=0.1, ground=False, size=(320, 320)))
    centres = [np.mean(np.nonzero(silhouette(f)[40:])[1]) for f in frames]
    assert np.ptp(centres) < 40  # followed: it stays in the middle
    assert all(silhouette(f)[40:].mean() > 0.03 for f in frames)


# ---------------------------------------------------------------------------
# fallbacks
# ---------------------------------------------------------------------------


def test_fallbacks_collision_geoms_then_skeleton():
    cart = viewer.Scene.build(sd.models.cart_pole())
    assert cart.source == "skeleton" and cart.n_triangles > 100
    assert any(p.name.startswith("joint") for p in cart.parts)  # the cart's box, the hinge's sphere
    image = viewer.render(cart, np.array([0.0, 0.3]))
    mask = silhouette(image)
    assert 0.02 < mask.mean() < 0.6  # no floor cutting through a hanging mounted skeleton
    model, _, q = robot("humanoid")
    geoms = viewer.Scene.build(model)  # no visuals: the collision geoms
    # its feet (all that collides) as parts, its floor plane as the ground
    assert geoms.source == "geoms" and len(geoms.parts) == len(model.geoms) - 1 and geoms.ground is not None
    assert silhouette(viewer.render(geoms, q, ground=False)).mean() > 0.03


def test_stick_figures_still_available():
    ax = viewer.draw_pose(sd.models.cart_pole(), np.zeros(2))
    assert ax.name == "3d" and callable(viewer.animate)
    assert viewer.frame_indices(10, max_frames=5)[-1] == 9
