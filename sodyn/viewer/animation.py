"""Animations of a trajectory with the robot's meshes: frames (:func:`render_frames`) and GIF or
MP4 files written atomically (:func:`save_animation`).

Frames are the rows :func:`sodyn.viewer.frame_indices` picks (every row, or with
``realtime`` one per ``1/fps`` seconds of simulated time, thinned evenly to ``max_frames``),
drawn as :func:`sodyn.viewer.render` draws a pose, by one camera fitted to the whole motion
(following the robot when it travels further than its own size, see
:class:`~sodyn.viewer.Camera`), titled with the time ``i · dt`` of row ``i`` when the step
``dt`` is given.

A GIF is written by Pillow (each frame quantized to its own 256-colour palette, looping); an
MP4 by ffmpeg (H.264, ``yuv420p``) from the ``imageio-ffmpeg`` package, which ships the
binary.  Either goes to a temporary file in the destination's folder that replaces ``path``
only once complete (:func:`sodyn.io.atomic.atomic_path`): a failed or interrupted write
leaves an existing file as it was.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator

import numpy as np

from sodyn.viewer.camera import Camera, fit
from sodyn.viewer.geometry import DEFAULT_MAX_TRIANGLES, body_poses
from sodyn.viewer.images import (
    arrow_scale,
    check_configurations,
    checked_size,
    corner_points,
    draw_frame,
    ground_plane,
    scene_for,
)
from sodyn.viewer.raster import Canvas, Style
from sodyn.viewer.sticks import animation_frames

#: Most frames :func:`save_animation` draws by default.
MESH_MAX_FRAMES = 200
#: Default animation size (W, H) in pixels.
ANIMATION_SIZE = (640, 640)
FORMATS = (".gif", ".mp4")


def render_frames(model_or_scene, qs, *, visuals=None, dt: float | None = None, fps: float = 30.0,
                  realtime: bool = False, max_frames: int = MESH_MAX_FRAMES, camera: Camera | None = None,
                  size=ANIMATION_SIZE, ground=None, shadows: bool = True, forces=None, force_scale: float | None = None,
                  title: str | None = None, style: Style | None = None,
                  max_triangles: int = DEFAULT_MAX_TRIANGLES) -> Iterator[np.ndarray]:
    """The RGBA frames ``(H, W, 4)`` of the trajectory ``qs (T, nq)`` (module docstring), one
    at a time.  ``forces``: ``(points (T, k, 3), vectors (T, k, 3))`` (see
    :mod:`sodyn.viewer.images`); ``style`` defaults to triangles without antialiasing (no
    seams, no edge strokes: faster); a scene built here holds up to ``max_triangles``.
    **Raises** ``ValueError`` for ``qs`` of the wrong shape or
    with non-finite entries, a non-positive ``fps``, ``dt`` or ``max_frames``, or ``realtime``
    without ``dt``."""
    scene = scene_for(model_or_scene, visuals, max_triangles=max_triangles)
    camera, style = camera or Camera(), style or Style(edges=False)
    qs = check_configurations(scene.model, qs, "qs", 2)
    idx = animation_frames(len(qs), fps=fps, dt=dt, realtime=realtime, max_frames=max_frames)
    body_r, body_p = body_poses(scene.model, qs[idx])
    pts = corner_points(scene, body_r, body_p)
    view = fit(camera, pts, checked_size(size))
    plane = ground_plane(scene, ground, pts)
    arrows, scale = None, 0.0
    if forces is not None:
        points, vectors = (np.asarray(x, np.float64) for x in forces)
        if points.shape != vectors.shape or points.ndim != 3 or len(points) != len(qs):
            raise ValueError(f"forces must be (points, vectors) of shape (T, k, 3) with T = {len(qs)}, got "
                             f"{points.shape} and {vectors.shape}")
        arrows = (points[idx], vectors[idx])
        scale = arrow_scale(arrows, pts, force_scale)
    canvas = Canvas(view.size, style)

    def frames() -> Iterator[np.ndarray]:
        for j, i in enumerate(idx):
            label = f"t = {i * dt:.3f} s" if dt is not None else f"sample {i}"
            draw_frame(canvas, scene, view, j, body_r[j], body_p[j], plane, shadows,
                   None if arrows is None else (arrows[0][j], arrows[1][j]), scale,
                   label if title is None else f"{title}    {label}")
            yield canvas.image()

    return frames()


def save_animation(model_or_scene, qs, path: str | os.PathLike, *, fps: float = 30.0, **options) -> str:
    """Write the trajectory ``qs (T, nq)`` to ``path``, a ``.gif`` or ``.mp4`` file (module
    docstring), and return ``path``; ``options`` are those of :func:`render_frames`.
    **Raises** ``ValueError`` for another suffix, ``ImportError`` naming the package for an
    MP4 without ``imageio-ffmpeg``."""
    from sodyn.io.atomic import atomic_path

    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise ValueError(f"save_animation: {path!r} must end with .gif or .mp4")
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg
        except ImportError as e:
            raise ImportError("an MP4 needs the imageio-ffmpeg package: pip install imageio-ffmpeg (or sodyn's "
                              "'viewer' extra)") from e
    frames = render_frames(model_or_scene, qs, fps=fps, **options)
    with atomic_path(path) as temp:
        if suffix == ".gif":
            _write_gif(frames, temp, fps)
        else:
            _write_mp4(frames, temp, fps, imageio_ffmpeg)
    return path


def _write_gif(frames: Iterator[np.ndarray], path: str, fps: float) -> None:
    from PIL import Image

    images = [Image.fromarray(f[..., :3]).quantize(256, method=Image.Quantize.FASTOCTREE,
                                                   dither=Image.Dither.NONE) for f in frames]
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:], loop=0,
                   duration=max(20, int(round(1000.0 / fps))))


def _write_mp4(frames: Iterator[np.ndarray], path: str, fps: float, imageio_ffmpeg) -> None:
    writer = None
    try:
        for f in frames:
            rgb = f[: f.shape[0] // 2 * 2, : f.shape[1] // 2 * 2, :3]  # H.264 in yuv420p: even sides
            if writer is None:
                with warnings.catch_warnings():  # JAX's note on os.fork: the child execs ffmpeg at once
                    warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
                    writer = imageio_ffmpeg.write_frames(path, (rgb.shape[1], rgb.shape[0]), fps=fps, codec="libx264",
                                                         pix_fmt_in="rgb24", pix_fmt_out="yuv420p", quality=8,
                                                         macro_block_size=2, ffmpeg_log_level="error",
                                                         output_params=["-f", "mp4"])
                    writer.send(None)
            writer.send(np.ascontiguousarray(rgb))
    finally:
        if writer is not None:
            writer.close()


__all__ = ["ANIMATION_SIZE", "FORMATS", "MESH_MAX_FRAMES", "render_frames", "save_animation"]
