"""Still images of a model: one pose (:func:`render`), many Monte Carlo samples overlaid or tiled
(:func:`render_samples`), saved atomically (:func:`save_image`).

Each function takes a :class:`~sodyn.viewer.geometry.Scene`, or a model (and optionally its
``visuals``) from which one is built (:func:`scene_for`).  Images are RGBA ``(H, W, 4)`` uint8
arrays of ``size = (W, H)`` pixels.

**Ground** (``ground``): ``None`` draws one where it belongs: the model's own plane if it has
one, else ``z = 0`` under a floating base, else (a fixed base) the plane ``z = min(0, lowest
point drawn)``, so it never cuts the robot; ``True`` draws it likewise always, ``False`` never;
a pair ``(normal, height)`` or an object with ``normal`` and ``height`` (a
:class:`~sodyn.simulate.GroundContact`) gives the plane.  ``shadows`` adds the robot's shadow
on it.

**Forces** (``forces``): ``(points (k, 3), vectors (k, 3))`` in the world frame (per frame for
animations: ``(T, k, 3)`` each), drawn as arrows of ``force_scale`` metres per newton (default:
the largest as long as a quarter of the robot); :func:`contact_arrows` makes them from a
rollout's contact forces.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from sodyn.model import Model
from sodyn.viewer.camera import Camera, View, fit
from sodyn.viewer.geometry import DEFAULT_MAX_TRIANGLES, Scene, body_poses
from sodyn.viewer.raster import Canvas, Style, draw_forces, draw_ground, draw_mesh, draw_shadow

#: Default image size (W, H) in pixels.
IMAGE_SIZE = (800, 640)
#: Triangles of the scene :func:`render` builds from a model (a still image can afford more).
STILL_MAX_TRIANGLES = 60_000
#: Default tile size of :func:`render_samples` with ``mode="tile"``.
TILE_SIZE = (320, 320)


def scene_for(model_or_scene, visuals=None, *, max_triangles: int = DEFAULT_MAX_TRIANGLES) -> Scene:
    """``model_or_scene`` itself if it is a :class:`Scene`, else :meth:`Scene.build` of the
    model with ``visuals`` (a tuple of :class:`~sodyn.io.visuals.Visual`, or anything
    :func:`sodyn.io.visuals.load_visuals` reads: a file path, an ``ExampleRobot``)."""
    if isinstance(model_or_scene, Scene):
        return model_or_scene
    if not isinstance(model_or_scene, Model):
        raise TypeError(f"expected a sodyn Model or a viewer Scene, got {type(model_or_scene).__name__}")
    if visuals is not None and not isinstance(visuals, (tuple, list)):
        from sodyn.io.visuals import load_visuals

        visuals = load_visuals(visuals)
    return Scene.build(model_or_scene, visuals, max_triangles=max_triangles)


def check_configurations(model: Model, qs, what: str, ndim: int) -> np.ndarray:
    """``qs`` as a finite float array of ``ndim`` dimensions ending in ``nq``, else ``ValueError``."""
    qs = np.asarray(qs)
    if qs.ndim != ndim or qs.shape[-1] != model.nq or 0 in qs.shape:
        shape = {1: f"({model.nq},)", 2: f"(T, {model.nq})", 3: f"(S, T, {model.nq})"}[ndim]
        raise ValueError(f"{what} must have shape {shape} for model {model.name!r}, got {qs.shape}")
    if not np.all(np.isfinite(qs)):
        raise ValueError(f"{what} has non-finite entries")
    return qs.astype(np.float64)


def corner_points(scene: Scene, body_r: np.ndarray, body_p: np.ndarray) -> np.ndarray:
    """World corners ``(T, 8 P, 3)`` of every part's bounding box, per frame."""
    corners, bodies = [], []
    for part in scene.parts:
        lo, hi = part.vertices.min(axis=0), part.vertices.max(axis=0)
        corners.append(np.stack(np.meshgrid(*zip(lo, hi), indexing="ij"), axis=-1).reshape(8, 3))
        bodies.append(np.full(8, part.body))
    if not corners:
        return body_p
    c, b = np.concatenate(corners), np.concatenate(bodies)
    return np.einsum("tkij,kj->tki", body_r[:, b], c) + body_p[:, b]


def _floating(model: Model) -> bool:
    return any(model.joint_types[k] == "free" and int(model.parent[k]) < 0 for k in range(model.n_bodies))


def ground_plane(scene: Scene, ground, points: np.ndarray) -> tuple[np.ndarray, float] | None:
    """The plane ``(normal, height)`` that ``ground`` asks for (module docstring)."""
    if ground is False:
        return None
    if ground is not None and ground is not True:
        normal, height = (ground.normal, ground.height) if hasattr(ground, "normal") else ground
        normal = np.asarray(normal, np.float64)
        return normal / np.linalg.norm(normal), float(np.asarray(height))
    if scene.ground is not None:
        return scene.ground
    if ground is None and not _floating(scene.model) and scene.source == "skeleton":
        return None  # a bare skeleton of a mounted model: no floor to stand on
    z = 0.0 if _floating(scene.model) else min(0.0, float(np.min(points[..., 2])) - 1e-3)
    return np.array([0.0, 0.0, 1.0]), z


def arrow_scale(forces, points: np.ndarray, scale: float | None) -> float:
    """Metres per newton for the arrows: ``scale``, else the largest a quarter of the robot's size."""
    if scale is not None:
        return float(scale)
    largest = float(np.max(np.linalg.norm(np.asarray(forces[1]), axis=-1), initial=0.0))
    size = float(np.max(np.ptp(points, axis=-2))) if points.shape[-2] > 1 else 1.0
    return 0.25 * size / largest if largest > 0 else 0.0


def on_ground(model_or_scene, q, *, visuals=None, height: float = 0.0) -> np.ndarray:
    """``q (nq,)`` with every root free joint moved vertically, all by one offset, so that the
    lowest vertex drawn lies at ``z = height`` (a fixed-base model's ``q`` is returned as is)."""
    scene = scene_for(model_or_scene, visuals)
    model = scene.model
    q = check_configurations(model, q, "q", 1).copy()
    roots = [k for k in range(model.n_bodies) if model.joint_types[k] == "free" and int(model.parent[k]) < 0]
    if not roots:
        return q
    r, p = body_poses(model, q[None])
    lowest = float(np.min(scene.world_vertices(r[0], p[0])[0][:, 2])) if scene.n_triangles else float(p[0, :, 2].min())
    for k in roots:
        q[model.joint_q_slice(k).start + 2] += height - lowest
    return q


def contact_arrows(model: Model, contact, qs, contact_force) -> tuple[np.ndarray, np.ndarray]:
    """Arrows for :func:`render` / :func:`~sodyn.viewer.save_animation` from the contact
    forces ``contact_force (T, nc, 3)`` of a rollout at configurations ``qs (T, nq)``: for a
    :class:`~sodyn.simulate.GroundContact` the points ``p − r n`` (sphere bottoms), for a
    :class:`~sodyn.simulate.ContactModel` each slot's contact point (midway between the two
    surfaces), and the forces (on body 2 of each slot)."""
    from sodyn.simulate import ContactModel

    if isinstance(contact, ContactModel):
        import jax
        import jax.numpy as jnp

        from sodyn.simulate.contact import body_frames

        def points(q):
            rot, origin, _ = body_frames(model, q, jnp.zeros(model.nv, q.dtype))
            return contact.contacts(model, rot, origin).position

        q = jnp.asarray(np.asarray(qs), model.mass.dtype)
        return np.asarray(jax.jit(jax.vmap(points))(q), np.float64), np.asarray(contact_force, np.float64)
    qs = np.asarray(qs, np.float64)
    r, p = body_poses(model, qs)
    body = np.asarray(contact.body)
    centres = np.einsum("tnij,nj->tni", r[:, body], np.asarray(contact.position, np.float64)) + p[:, body]
    bottoms = centres - np.asarray(contact.radius, np.float64)[:, None] * np.asarray(contact.normal, np.float64)
    return bottoms, np.asarray(contact_force, np.float64)


def render(model_or_scene, q, *, visuals=None, camera: Camera | None = None, size=IMAGE_SIZE, ground=None,
           shadows: bool = True, forces=None, force_scale: float | None = None, title: str | None = None,
           style: Style | None = None, max_triangles: int = STILL_MAX_TRIANGLES) -> np.ndarray:
    """The RGBA image ``(H, W, 4)`` of the configuration ``q (nq,)``: the scene's triangles
    shaded (:mod:`sodyn.viewer.raster`) as ``camera`` sees them (fitted to the robot unless it
    fixes ``distance`` and ``target``), with the ground, shadows and force arrows (module
    docstring) and ``title`` at the top left; a scene built here from a model holds up to
    ``max_triangles`` triangles; ``style`` sets colours, light and antialiasing.  **Raises**
    ``ValueError`` for a ``q`` of the wrong shape or with non-finite entries."""
    scene = scene_for(model_or_scene, visuals, max_triangles=max_triangles)
    camera, style = camera or Camera(), style or Style()
    q = check_configurations(scene.model, q, "q", 1)
    body_r, body_p = body_poses(scene.model, q[None])
    pts = corner_points(scene, body_r, body_p)
    view = fit(camera, pts, checked_size(size))
    plane = ground_plane(scene, ground, pts)
    canvas = Canvas(view.size, style)
    arrows = None
    if forces is not None:
        arrows = (np.asarray(forces[0], np.float64).reshape(-1, 3), np.asarray(forces[1], np.float64).reshape(-1, 3))
    draw_frame(canvas, scene, view, 0, body_r[0], body_p[0], plane, shadows, arrows,
           arrow_scale(arrows, pts, force_scale) if arrows is not None else 0.0, title)
    return canvas.image()


def checked_size(size) -> tuple[int, int]:
    w, h = (int(s) for s in size)
    if w < 16 or h < 16:
        raise ValueError(f"size must be at least 16 x 16 pixels, got {size!r}")
    return w, h


def draw_frame(canvas: Canvas, scene: Scene, view: View, i: int, body_r, body_p, plane, shadows: bool, arrows,
           scale: float, title, rgba_scale=None) -> None:
    """Put one frame on ``canvas`` (ground, shadow, robot, arrows, title)."""
    canvas.clear()
    if plane is not None:
        draw_ground(canvas, view, i, plane, 1.3 * view.distance)
    draw_mesh(canvas, scene, view, i, body_r, body_p, rgba_scale)
    if plane is not None and shadows:
        draw_shadow(canvas, scene, view, i, body_r, body_p, plane)
    if arrows is not None:
        draw_forces(canvas, view, i, arrows[0], arrows[1], scale)
    canvas.text.set_text(title or "")


def render_samples(model_or_scene, qs, *, visuals=None, mode: str = "overlay", highlight: int | None = 0,
                   alpha: float | None = None, camera: Camera | None = None, size=IMAGE_SIZE, tile_size=TILE_SIZE,
                   ground=None, max_samples: int = 100, title: str | None = None, style: Style | None = None,
                   max_triangles: int = DEFAULT_MAX_TRIANGLES) -> np.ndarray:
    """One image of many configurations ``qs (S, nq)`` (Monte Carlo samples, or poses of one
    trajectory), the first ``max_samples`` of them.

    ``mode="overlay"``: each sample drawn alone, then blended over the ground with opacity
    ``alpha`` (default ``clip(2.5 / S, 0.1, 0.6)``), farthest sample first; sample
    ``highlight`` (``None``: none) is drawn opaque on top.  ``mode="tile"``: a grid of
    ``ceil(√S)`` columns of ``tile_size`` tiles, one sample each, all seen from the same
    direction and distance, each centred on its sample, titled with its index."""
    scene = scene_for(model_or_scene, visuals, max_triangles=max_triangles)
    camera, style = camera or Camera(), style or Style()
    qs = check_configurations(scene.model, qs, "qs", 2)[:max_samples]
    if mode not in ("overlay", "tile"):
        raise ValueError(f"mode must be 'overlay' or 'tile', got {mode!r}")
    body_r, body_p = body_poses(scene.model, qs)
    pts = corner_points(scene, body_r, body_p)
    plane = ground_plane(scene, ground, pts)
    n = len(qs)
    if mode == "tile":
        cols = math.ceil(math.sqrt(n))
        rows = math.ceil(n / cols)
        tw, th = checked_size(tile_size)
        view = fit(dataclasses.replace(camera, follow=True), pts, (tw, th))
        canvas = Canvas((tw, th), style)
        out = np.full((rows * th, cols * tw, 4), 255, np.uint8)
        out[..., :3] = (np.asarray(style.background[:3]) * 255).astype(np.uint8)
        for s in range(n):
            draw_frame(canvas, scene, view, s, body_r[s], body_p[s], plane, True, None, 0.0, f"sample {s}")
            r, c = divmod(s, cols)
            out[r * th:(r + 1) * th, c * tw:(c + 1) * tw] = canvas.image()
        return out
    view = fit(dataclasses.replace(camera, follow=False), pts.reshape(1, -1, 3), checked_size(size))
    canvas = Canvas(view.size, style)
    canvas.clear()
    if plane is not None:
        draw_ground(canvas, view, 0, plane, 1.3 * view.distance)
    canvas.text.set_text(title or "")
    image = canvas.image()[..., :3].astype(np.float32) / 255.0
    ghost = Canvas(view.size, dataclasses.replace(style, edges=False), transparent=True)
    a = float(np.clip(2.5 / n, 0.1, 0.6)) if alpha is None else float(alpha)
    depth = (body_p[:, :-1].mean(axis=1) - view.eye[0]) @ view.forward
    order = [s for s in np.argsort(-depth) if s != highlight] + ([highlight] if highlight is not None else [])
    for s in order:
        if s == highlight:
            ghost = Canvas(view.size, style, transparent=True)
        ghost.clear()
        draw_mesh(ghost, scene, view, 0, body_r[s], body_p[s])
        layer = ghost.image()
        covered = layer[..., 3] > 0
        rows, cols = np.flatnonzero(covered.any(axis=1)), np.flatnonzero(covered.any(axis=0))
        if len(rows) == 0:
            continue
        box = np.s_[rows.min(): rows.max() + 1, cols.min(): cols.max() + 1]
        part = layer[box].astype(np.float32) / 255.0
        w = part[..., 3:] * (1.0 if s == highlight else a)
        image[box] = image[box] * (1 - w) + part[..., :3] * w
    out = np.full((*image.shape[:2], 4), 255, np.uint8)
    out[..., :3] = (np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8)
    return out


def save_image(path: str | os.PathLike, image: np.ndarray) -> str:
    """Write the RGBA ``image`` to ``path`` (format from the suffix: ``.png``, ``.jpg``, ...)
    atomically (:func:`sodyn.io.atomic.atomic_path`: a failed write leaves an existing file as
    it was); returns ``path``."""
    from PIL import Image

    from sodyn.io.atomic import atomic_path

    path = os.fspath(path)
    picture = Image.fromarray(np.asarray(image, np.uint8))
    if path.lower().endswith((".jpg", ".jpeg")):
        picture = picture.convert("RGB")
    with atomic_path(path) as temp:
        picture.save(temp)
    return path


__all__ = ["IMAGE_SIZE", "STILL_MAX_TRIANGLES", "TILE_SIZE", "arrow_scale", "check_configurations", "contact_arrows",
           "corner_points", "ground_plane", "on_ground", "render", "render_samples", "save_image", "scene_for"]
