"""An interactive 3D view in the browser (or a notebook's browser tab) through viser.

:func:`interactive_scene` builds the description, with no server and no viser: one
:class:`MeshNode` per part and colour (vertices in its body frame), and the world pose of every
body at every time step for the robot and for each Monte Carlo sample.  :func:`show` sends it
to a ``viser.ViserServer``: the robot's meshes, the samples as instanced meshes (one
``add_batched_meshes_simple`` per mesh, ``S`` instances, translucent), a grid for the ground,
and with more than one time step a slider over the steps (showing the time ``i · dt``) and a
play button.  Open the printed address (``http://127.0.0.1:8080`` by default) in a browser;
the view follows the slider in every connected client.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np

from sodyn.viewer.camera import Camera, fit
from sodyn.viewer.geometry import Scene, body_poses
from sodyn.viewer.images import check_configurations, corner_points, ground_plane, scene_for


@dataclasses.dataclass(frozen=True, eq=False)
class MeshNode:
    """One mesh of the view: ``name`` (a viser scene path), ``body`` (index into the poses;
    the last is the world), ``vertices (n, 3)`` in the body frame, ``faces (m, 3)``,
    ``color`` (RGB 0–255) and ``opacity``."""

    name: str
    body: int
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple[int, int, int]
    opacity: float


@dataclasses.dataclass(frozen=True, eq=False)
class InteractiveScene:
    """What :func:`show` draws: ``meshes``; ``positions (T, n + 1, 3)`` and ``wxyz (T, n + 1, 4)``
    (quaternions ``[w, x, y, z]``), the robot's body poses per time step (``None`` without a
    robot); ``sample_positions (T, S, n + 1, 3)`` and ``sample_wxyz (T, S, n + 1, 4)`` for the
    Monte Carlo samples (``None`` without); ``times (T,)``; ``ground``: ``(normal, height)`` or
    ``None``; ``sample_opacity``; ``eye``, ``look_at``: the initial camera (the still images'
    fit, :func:`sodyn.viewer.camera.fit`); ``extent``: the size of what is shown (m)."""

    name: str
    meshes: tuple[MeshNode, ...]
    times: np.ndarray
    positions: np.ndarray | None
    wxyz: np.ndarray | None
    sample_positions: np.ndarray | None
    sample_wxyz: np.ndarray | None
    ground: tuple[np.ndarray, float] | None
    sample_opacity: float
    eye: np.ndarray
    look_at: np.ndarray
    extent: float

    @property
    def n_steps(self) -> int:
        return int(len(self.times))

    @property
    def n_samples(self) -> int:
        return 0 if self.sample_positions is None else int(self.sample_positions.shape[1])


def matrix_to_wxyz(r: np.ndarray) -> np.ndarray:
    """Unit quaternions ``[w, x, y, z] (..., 4)`` of rotation matrices ``(..., 3, 3)`` (the
    largest-component branch per matrix, so every rotation is accurate)."""
    r = np.asarray(r, np.float64)
    m00, m11, m22 = r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]
    cands = np.stack([
        np.stack([1 + m00 + m11 + m22, r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0],
                  r[..., 1, 0] - r[..., 0, 1]], -1),
        np.stack([r[..., 2, 1] - r[..., 1, 2], 1 + m00 - m11 - m22, r[..., 0, 1] + r[..., 1, 0],
                  r[..., 0, 2] + r[..., 2, 0]], -1),
        np.stack([r[..., 0, 2] - r[..., 2, 0], r[..., 0, 1] + r[..., 1, 0], 1 - m00 + m11 - m22,
                  r[..., 1, 2] + r[..., 2, 1]], -1),
        np.stack([r[..., 1, 0] - r[..., 0, 1], r[..., 0, 2] + r[..., 2, 0], r[..., 1, 2] + r[..., 2, 1],
                  1 - m00 - m11 + m22], -1),
    ], -2)
    best = np.argmax(np.stack([m00 + m11 + m22, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cands, best[..., None, None], axis=-2)[..., 0, :]
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def _meshes(scene: Scene, prefix: str, opacity: float) -> list[MeshNode]:
    out = []
    model = scene.model
    for i, part in enumerate(scene.parts):
        colours, index = np.unique(np.round(part.face_rgba, 3), axis=0, return_inverse=True)
        index = index.reshape(-1)
        body = model.body_names[part.body] if part.body >= 0 else "world"
        for k, colour in enumerate(colours):
            faces = part.triangles[index == k]
            used, faces = np.unique(faces, return_inverse=True)
            rgb = tuple(int(round(255 * c)) for c in colour[:3])
            name = f"{prefix}/{body}/{i}_{part.name}" + (f"_{k}" if len(colours) > 1 else "")
            out.append(MeshNode(name.replace(":", "_"), part.body, part.vertices[used].astype(np.float32),
                                faces.reshape(-1, 3).astype(np.uint32), rgb, float(colour[3]) * opacity))
    return out


def interactive_scene(model_or_scene, qs=None, *, samples=None, dt: float | None = None, visuals=None,
                      ground=None, max_samples: int = 100, sample_opacity: float = 0.3) -> InteractiveScene:
    """The :class:`InteractiveScene` of a pose or trajectory ``qs`` (``(nq,)`` or ``(T, nq)``)
    and/or Monte Carlo ``samples`` (``(S, nq)`` or ``(S, T, nq)``, the first ``max_samples``),
    with the same ``T`` when both are given; ``dt`` the time step (``times`` are step indices
    without it); ``ground`` as in :func:`sodyn.viewer.render`.  **Raises** ``ValueError``
    without poses, for arrays of the wrong shape, non-finite entries or different ``T``."""
    scene = scene_for(model_or_scene, visuals)
    model = scene.model
    if qs is None and samples is None:
        raise ValueError("interactive_scene needs qs, samples or both")
    traj = None if qs is None else check_configurations(model, np.atleast_2d(qs), "qs", 2)
    batch = None
    if samples is not None:
        samples = np.asarray(samples)
        batch = check_configurations(model, samples[:, None] if samples.ndim == 2 else samples, "samples", 3)
        batch = batch[:max_samples]
    steps = {len(x) for x in ((traj,) if traj is not None else ()) + ((batch[0],) if batch is not None else ())}
    if len(steps) != 1:
        raise ValueError(f"qs and samples must have the same number of time steps, got {sorted(steps)}")
    t = steps.pop()
    meshes: list[MeshNode] = []
    positions = wxyz = sample_positions = sample_wxyz = None
    pts = []
    if traj is not None:
        r, p = body_poses(model, traj)
        positions, wxyz = p, matrix_to_wxyz(r)
        meshes += _meshes(scene, "/robot", 1.0)
        pts.append(corner_points(scene, r, p).reshape(-1, 3))
    if batch is not None:
        s = len(batch)
        r, p = body_poses(model, batch.reshape(-1, model.nq))
        sample_positions = p.reshape(s, t, -1, 3).transpose(1, 0, 2, 3)
        sample_wxyz = matrix_to_wxyz(r).reshape(s, t, -1, 4).transpose(1, 0, 2, 3)
        meshes += _meshes(scene, "/samples", 1.0)
        pts.append(corner_points(scene, r, p).reshape(-1, 3))
    pts = np.concatenate(pts)
    plane = ground_plane(scene, ground, pts[None])
    view = fit(Camera(follow=False), pts[None], (1200, 800))
    times = np.arange(t) * (dt if dt is not None else 1.0)
    return InteractiveScene(model.name, tuple(meshes), times, positions, wxyz, sample_positions, sample_wxyz,
                            plane, float(sample_opacity), view.eye[0], view.target[0],
                            float(np.max(np.ptp(pts, axis=0))))


class ViserView:
    """A running view: ``server`` (the ``viser.ViserServer``), ``url``, ``handles`` (scene path →
    viser handle), ``slider`` (``None`` for one step); :meth:`set_step` poses every mesh at a
    time step; :meth:`close` stops the server."""

    def __init__(self, server, description: InteractiveScene):
        self.server, self.description = server, description
        self.handles: dict[str, object] = {}
        self.slider = self.playing = None
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.server.get_host()}:{self.server.get_port()}"

    def set_step(self, i: int) -> None:
        d = self.description
        for node in d.meshes:
            h = self.handles[node.name]
            if node.name.startswith("/samples/"):
                h.batched_positions = d.sample_positions[i, :, node.body].astype(np.float32)
                h.batched_wxyzs = d.sample_wxyz[i, :, node.body].astype(np.float32)
            else:
                h.position = d.positions[i, node.body]
                h.wxyz = d.wxyz[i, node.body]

    def close(self) -> None:
        self._stop.set()
        self.server.stop()

    def _play(self, fps) -> None:
        while not self._stop.wait(1.0 / fps):
            if self.playing is not None and self.playing.value and self.slider is not None:
                self.slider.value = (int(self.slider.value) + 1) % self.description.n_steps


def show(model_or_scene, qs=None, *, samples=None, dt: float | None = None, visuals=None, ground=None,
         host: str = "127.0.0.1", port: int = 8080, server=None, fps: float = 30.0, block: bool = False,
         **options) -> ViserView:
    """Serve :func:`interactive_scene` of ``qs`` and/or ``samples`` with viser (module
    docstring) on ``host:port`` (or the given ``viser.ViserServer``) and return the
    :class:`ViserView`; ``block=True`` serves until Ctrl-C.  **Raises** ``ImportError`` naming
    the package without viser."""
    try:
        import viser
    except ImportError as e:
        raise ImportError("the interactive view needs viser: pip install viser (or sodyn's 'viewer' extra)") from e
    d = interactive_scene(model_or_scene, qs, samples=samples, dt=dt, visuals=visuals, ground=ground, **options)
    if server is None:
        server = viser.ViserServer(host=host, port=port, verbose=False)
    view = ViserView(server, d)
    server.scene.set_up_direction("+z")
    server.initial_camera.position = tuple(float(x) for x in d.eye)
    server.initial_camera.look_at = tuple(float(x) for x in d.look_at)
    server.initial_camera.up = (0.0, 0.0, 1.0)
    if d.ground is not None:
        normal, height = d.ground
        cell = float(10.0 ** np.floor(np.log10(max(d.extent, 1e-3) / 2)))
        server.scene.add_grid("/ground", width=40 * cell, height=40 * cell, plane="xy", cell_size=cell,
                              section_size=5 * cell, position=tuple(float(x) for x in height * np.asarray(normal)))
    for node in d.meshes:
        if node.name.startswith("/samples/"):
            view.handles[node.name] = server.scene.add_batched_meshes_simple(
                node.name, node.vertices, node.faces, batched_wxyzs=d.sample_wxyz[0, :, node.body].astype(np.float32),
                batched_positions=d.sample_positions[0, :, node.body].astype(np.float32), batched_colors=node.color,
                opacity=node.opacity * d.sample_opacity, side="double")
        else:
            view.handles[node.name] = server.scene.add_mesh_simple(
                node.name, node.vertices, node.faces, color=node.color,
                opacity=node.opacity if node.opacity < 1 else None, side="double", wxyz=d.wxyz[0, node.body],
                position=d.positions[0, node.body])
    if d.n_steps > 1:
        view.slider = server.gui.add_slider("step", min=0, max=d.n_steps - 1, step=1, initial_value=0)
        clock = server.gui.add_number("t [s]" if dt is not None else "t [steps]", float(d.times[0]), disabled=True)
        view.playing = server.gui.add_checkbox("play", False)

        @view.slider.on_update
        def _(_event) -> None:
            i = int(view.slider.value)
            view.set_step(i)
            clock.value = float(d.times[i])

        threading.Thread(target=view._play, args=(fps,), daemon=True).start()
    if block:
        print(f"sodyn viewer: open {view.url} in a browser (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            view.close()
    return view


__all__ = ["InteractiveScene", "MeshNode", "ViserView", "interactive_scene", "matrix_to_wxyz", "show"]
