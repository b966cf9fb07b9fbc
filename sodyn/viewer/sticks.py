"""Stick figures, the fast fallback that needs no geometry: matplotlib 3D axes drawn by the Agg
canvas (PNG files, GIF animations).

* :func:`draw_pose` draws one configuration: a segment from each body's parent origin to its
  origin (from the world origin for a mounted root), a segment from each body's origin to every
  frame on it, the body and frame origins, the contact points of a
  :class:`~sodyn.simulate.GroundContact`, and its ground plane;
* :func:`animate` saves a trajectory ``(T, nq)`` as a GIF (``matplotlib.animation.PillowWriter``),
  subsampled to a few dozen frames to keep the file small.

World poses come from :func:`sodyn.forward_kinematics` (Jain Alg. 3.1).  The 3D axes have equal
scales, so lengths and angles look as they are.  matplotlib is an optional dependency (in the
``test`` and ``bench`` extras); it is imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import numpy as np

from sodyn.algorithms.kinematics import forward_kinematics
from sodyn.io.atomic import atomic_path
from sodyn.model import Model

#: Most frames :func:`animate` writes by default (GIF size grows with the frame count).
MAX_FRAMES = 60
_ZERO_LENGTH = 1e-9


def matplotlib_classes():
    """matplotlib's ``Figure``, Agg canvas and ``PillowWriter``, or a clear ``ImportError``."""
    try:
        from matplotlib.animation import PillowWriter
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - exercised only without matplotlib
        raise ImportError("sodyn.viewer needs matplotlib (and Pillow for GIFs): pip install matplotlib, "
                          "or install sodyn with the 'test' or 'bench' extra") from e
    return Figure, FigureCanvasAgg, PillowWriter


def new_axes(figsize: tuple[float, float] = (5.0, 5.0), dpi: int = 100):
    """A 3D ``Axes`` on a new figure with an Agg canvas (no pyplot, no display)."""
    Figure, FigureCanvasAgg, _ = matplotlib_classes()
    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig.add_subplot(projection="3d")


# ---------------------------------------------------------------------------
# geometry (host NumPy)
# ---------------------------------------------------------------------------


def _poses(model: Model, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Body rotations ``(T, n, 3, 3)``, body origins ``(T, n, 3)`` and frame origins ``(T, nf, 3)``."""
    fk = jax.jit(jax.vmap(lambda q: forward_kinematics(model, q)))(qs)
    return (np.asarray(fk.body.rotation, np.float64), np.asarray(fk.body.translation, np.float64),
            np.asarray(fk.frame.translation, np.float64))


def _segments(model: Model, body_p: np.ndarray, frame_p: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The links of one pose: parent origin → child origin, body origin → each frame origin on it."""
    parent = np.asarray(model.parent)
    segments = []
    for k in range(model.n_bodies):
        if parent[k] >= 0:
            segments.append((body_p[parent[k]], body_p[k]))
        elif model.joint_types[k] != "free":  # a mounted root hangs from the world origin
            segments.append((np.zeros(3), body_p[k]))
    for f, b in enumerate(model.frame_body):
        start = body_p[b] if b >= 0 else np.zeros(3)
        if np.linalg.norm(frame_p[f] - start) > _ZERO_LENGTH:
            segments.append((start, frame_p[f]))
    return segments


def _contact_points(contact, body_r: np.ndarray, body_p: np.ndarray) -> np.ndarray:
    """World positions ``(nc, 3)`` of the contact points' lowest points ``p − r n``."""
    body = np.asarray(contact.body)
    pos = np.asarray(contact.position, np.float64)
    centres = body_p[body] + np.einsum("nij,nj->ni", body_r[body], pos)
    return centres - np.asarray(contact.radius, np.float64)[:, None] * np.asarray(contact.normal, np.float64)


def _plane(contact) -> tuple[np.ndarray, float]:
    if contact is None:
        return np.array([0.0, 0.0, 1.0]), 0.0
    return np.asarray(contact.normal, np.float64), float(contact.height)


def _limits(points: np.ndarray, ground: bool, plane) -> tuple[np.ndarray, float]:
    """Centre and half-width of a cube holding ``points`` (and the ground under them)."""
    pts = points.reshape(-1, 3)
    if ground:
        n, h = plane
        pts = np.concatenate([pts, pts - np.outer(pts @ n - h, n)])  # their feet on the plane
    lo, hi = pts.min(0), pts.max(0)
    half = max(0.5 * float(np.max(hi - lo)) * 1.15, 0.1)
    return 0.5 * (lo + hi), half


def _tangents(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


# ---------------------------------------------------------------------------
# drawing
# ---------------------------------------------------------------------------


def _draw(ax, model: Model, body_r, body_p, frame_p, *, frames: bool, contact, ground: bool, plane, limits) -> None:
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    centre, half = limits
    ax.computed_zorder = False  # draw in call order: the ground first, the robot over it
    if ground:
        n, h = plane
        t1, t2 = _tangents(n)
        foot = centre - (centre @ n - h) * n
        corners = [foot + half * (s1 * t1 + s2 * t2) for s1, s2 in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        ax.add_collection3d(Poly3DCollection([corners], facecolor="0.85", edgecolor="0.6", alpha=0.5))
    for a, b in _segments(model, body_p, frame_p):
        ax.plot(*np.stack([a, b]).T, color="tab:blue", linewidth=2.5, solid_capstyle="round")
    ax.scatter(*body_p.T, color="black", s=12, depthshade=False)
    if frames and model.n_frames:
        on_body = np.array([b >= 0 for b in model.frame_body])
        apart = [f for f in range(model.n_frames)
                 if np.linalg.norm(frame_p[f] - (body_p[model.frame_body[f]] if on_body[f] else 0.0)) > _ZERO_LENGTH]
        if apart:
            ax.scatter(*frame_p[apart].T, color="tab:orange", s=10, marker="^", depthshade=False)
    if contact is not None:
        ax.scatter(*_contact_points(contact, body_r, body_p).T, color="tab:red", s=18, depthshade=False)
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1.0, 1.0, 1.0))
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")


def _check_qs(model: Model, qs, what: str) -> np.ndarray:
    qs = np.asarray(qs)
    if qs.ndim != 2 or qs.shape[1] != model.nq or qs.shape[0] == 0:
        raise ValueError(f"{what} must have shape (T, {model.nq}) with T >= 1 for model {model.name!r}, "
                         f"got {qs.shape}")
    if not np.all(np.isfinite(qs)):
        raise ValueError(f"{what} has non-finite entries")
    return qs.astype(np.asarray(model.mass).dtype)


def draw_pose(model: Model, q, ax=None, *, frames: bool = True, contact=None, ground: bool = True, title=None):
    """Draw the configuration ``q (nq,)`` of ``model`` as a stick figure on 3D axes.

    Links are segments from each body's parent origin to its origin (from the world origin for
    a root that is not a free joint), and from each body's origin to every frame on it; body
    origins are black dots, frame origins (``frames=True``) orange triangles, the lowest points
    ``p − r n`` of the spheres of ``contact`` (a :class:`~sodyn.simulate.GroundContact`) red
    dots, and ``ground=True`` shades the plane (``contact``'s, else ``z = 0``).

    **Arguments:** ``ax``: a 3D ``Axes`` to draw on (default: a new figure with an Agg canvas,
    see :func:`new_axes`).  **Returns** the ``Axes`` (``ax.figure.savefig(path)`` writes it).
    **Raises** ``ValueError`` for a ``q`` of the wrong shape or with non-finite entries.
    """
    q = _check_qs(model, np.asarray(q)[None] if np.ndim(q) == 1 else q, "q")
    if q.shape[0] != 1:
        raise ValueError(f"q must have shape ({model.nq},), got {np.shape(q)}")
    if ax is None:
        ax = new_axes()
    body_r, body_p, frame_p = (x[0] for x in _poses(model, q))
    plane = _plane(contact)
    points = np.concatenate([body_p, frame_p, np.zeros((1, 3))])
    if contact is not None:
        points = np.concatenate([points, _contact_points(contact, body_r, body_p)])
    _draw(ax, model, body_r, body_p, frame_p, frames=frames, contact=contact, ground=ground, plane=plane,
          limits=_limits(points, ground, plane))
    if title is not None:
        ax.set_title(title)
    return ax


def frame_indices(n: int, *, max_frames: int, fps: float = 30.0, dt: float | None = None) -> np.ndarray:
    """Which of ``n`` trajectory samples :func:`animate` shows: with a step ``dt``, every
    ``round(1/(fps dt))``-th (real time at ``fps``), else every one; thinned further to at most
    ``max_frames`` (evenly).  The last is always included."""
    stride = max(1, round(1.0 / (fps * dt))) if dt is not None else 1
    stride = max(stride, math.ceil(n / max_frames))
    idx = np.arange(0, n, stride)
    return idx if idx[-1] == n - 1 else np.append(idx, n - 1)


def animation_frames(n: int, *, fps, dt, realtime: bool, max_frames) -> np.ndarray:
    """The rows of an ``n``-row trajectory an animation shows (:func:`frame_indices`, in real
    time only with ``realtime``), after checking the options.  **Raises** ``ValueError`` for a
    non-positive ``fps``, ``dt`` or ``max_frames``, or ``realtime`` without ``dt``."""
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    if dt is not None and not dt > 0:
        raise ValueError(f"dt must be positive or None, got {dt!r}")
    if realtime and dt is None:
        raise ValueError("realtime=True needs the step dt")
    if not (isinstance(max_frames, int) and max_frames >= 1):
        raise ValueError(f"max_frames must be a positive integer, got {max_frames!r}")
    return frame_indices(n, max_frames=max_frames, fps=fps, dt=dt if realtime else None)


def animate(model: Model, qs, path: str, *, fps: int = 30, dt: float | None = None, realtime: bool = False,
            contact=None, frames: bool = True, ground: bool = True, max_frames: int = MAX_FRAMES,
            figsize: Sequence[float] = (3.6, 3.6), dpi: int = 72, title: str | None = None) -> str:
    """Save the trajectory ``qs (T, nq)`` as a GIF at ``path`` and return ``path``.

    Shows at most ``max_frames`` poses, evenly spaced (slow motion for a short trajectory), or
    with ``realtime=True`` one every ``1/fps`` seconds of simulated time (:func:`frame_indices`),
    drawn as :func:`draw_pose` does on fixed axes holding the whole trajectory, titled with the
    time ``i · dt`` of row ``i`` when the step ``dt`` is given (row 0 at ``t = 0``).  Written by
    ``matplotlib.animation.PillowWriter`` through the Agg canvas, atomically
    (:func:`sodyn.io.atomic.atomic_path`: a failed write leaves an existing file at ``path`` as it was).

    **Raises** ``ValueError`` for ``qs`` of the wrong shape or with non-finite entries, or a
    non-positive ``fps``, ``dt`` or ``max_frames``, or ``realtime`` without ``dt``.
    """
    qs = _check_qs(model, qs, "qs")
    idx = animation_frames(qs.shape[0], fps=fps, dt=dt, realtime=realtime, max_frames=max_frames)
    _, _, PillowWriter = matplotlib_classes()
    body_r, body_p, frame_p = _poses(model, qs[idx])
    plane = _plane(contact)
    points = [body_p.reshape(-1, 3), frame_p.reshape(-1, 3), np.zeros((1, 3))]
    if contact is not None:
        points += [_contact_points(contact, r, p) for r, p in zip(body_r, body_p)]
    limits = _limits(np.concatenate(points), ground, plane)
    ax = new_axes(tuple(figsize), dpi)
    writer = PillowWriter(fps=fps)
    with atomic_path(path) as temp, writer.saving(ax.figure, temp, dpi):
        for j, i in enumerate(idx):
            ax.cla()
            _draw(ax, model, body_r[j], body_p[j], frame_p[j], frames=frames, contact=contact, ground=ground,
                  plane=plane, limits=limits)
            label = f"t = {i * dt:.3f} s" if dt is not None else f"sample {i}"
            ax.set_title(label if title is None else f"{title}\n{label}")
            writer.grab_frame()
    return path


__all__ = ["MAX_FRAMES", "animate", "animation_frames", "draw_pose", "frame_indices", "new_axes"]
