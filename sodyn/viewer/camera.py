"""A perspective camera looking at a target, and its fit to what it must show.

The camera sits at ``target + distance · (cos e cos a, cos e sin a, sin e)`` (azimuth ``a``
from the world ``x`` axis towards ``y``, elevation ``e`` above the horizontal plane), looks at
``target`` with the world ``z`` up, and has the vertical field of view ``fov``.  A point ``x``
has camera coordinates ``(right·d, up·d, forward·d)`` with ``d = x − eye``; it lands on pixel

    u = W/2 + f (right·d)/(forward·d),   v = H/2 − f (up·d)/(forward·d),   f = (H/2) / tan(fov/2).

:func:`fit` chooses ``target`` and ``distance`` (those not given) so that the points' projection
spans :data:`FILL` of the image's width or height: it centres their projected bounding box and
scales the distance, a few times over (perspective makes one step approximate).  With
``follow`` the target moves with the points' horizontal centre frame by frame (a walking robot
stays in view) and the distance fits every frame's points about their own centre.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: The fraction of the image width and height the fitted points may span.
FILL = 0.86
#: Nearest depth drawn (as a fraction of the camera distance).
NEAR = 0.05


@dataclasses.dataclass(frozen=True)
class Camera:
    """Where the camera looks from (module docstring): ``azimuth`` and ``elevation`` in degrees,
    ``fov`` the vertical field of view in degrees, ``distance`` (m) and ``target`` (world point)
    fitted to the scene when ``None``; ``follow`` (``None``: when the robot travels further
    than its own size) moves the target with the robot."""

    azimuth: float = 35.0
    elevation: float = 18.0
    fov: float = 30.0
    distance: float | None = None
    target: tuple[float, float, float] | None = None
    follow: bool | None = None

    def __post_init__(self):
        if not 1.0 <= self.fov <= 150.0:
            raise ValueError(f"Camera: fov must be in [1, 150] degrees, got {self.fov!r}")
        if self.distance is not None and not self.distance > 0:
            raise ValueError(f"Camera: distance must be positive, got {self.distance!r}")
        if not -89.0 <= self.elevation <= 89.0:
            raise ValueError(f"Camera: elevation must be in [-89, 89] degrees, got {self.elevation!r}")

    def axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(back, right, up, forward)``: unit vectors, ``back`` from the target to the eye."""
        a, e = np.radians(self.azimuth), np.radians(self.elevation)
        back = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
        forward = -back
        right = np.cross(forward, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        return back, right, np.cross(right, forward), forward


@dataclasses.dataclass(frozen=True)
class View:
    """A placed camera: ``eye (T, 3)`` and ``target (T, 3)`` per frame (one row when fixed),
    its axes, focal length ``focal`` in pixels and image ``size (W, H)``."""

    eye: np.ndarray
    target: np.ndarray
    right: np.ndarray
    up: np.ndarray
    forward: np.ndarray
    focal: float
    size: tuple[int, int]
    distance: float

    def at(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Eye and target of frame ``i``."""
        j = min(i, len(self.eye) - 1)
        return self.eye[j], self.target[j]

    def project(self, points: np.ndarray, i: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates ``(..., 2)`` and depths ``(...)`` of world ``points (..., 3)``."""
        eye, _ = self.at(i)
        d = points - eye
        depth = d @ self.forward
        safe = np.where(depth > NEAR * self.distance, depth, NEAR * self.distance)
        w, h = self.size
        u = 0.5 * w + self.focal * (d @ self.right) / safe
        v = 0.5 * h - self.focal * (d @ self.up) / safe
        return np.stack([u, v], axis=-1), depth


def _tangents(points: np.ndarray, eye, right, up, forward) -> tuple[np.ndarray, np.ndarray]:
    d = points - eye
    depth = np.maximum(d @ forward, 1e-9)
    return (d @ right) / depth, (d @ up) / depth


def fit(camera: Camera, points: np.ndarray, size: tuple[int, int]) -> View:
    """The :class:`View` of ``camera`` for ``points (T, K, 3)`` (K points per frame; module
    docstring)."""
    points = np.asarray(points, np.float64)
    w, h = size
    tan_v = np.tan(np.radians(camera.fov) / 2)
    tan_h = tan_v * w / h
    back, right, up, forward = camera.axes()
    centres = 0.5 * (points.min(axis=1) + points.max(axis=1))  # (T, 3)
    frame_size = float(np.max(np.ptp(points, axis=1))) if points.shape[1] > 1 else 1.0
    travel = float(np.max(np.ptp(centres[:, :2], axis=0))) if len(centres) > 1 else 0.0
    follow = camera.follow if camera.follow is not None else travel > 0.75 * max(frame_size, 1e-6)
    if follow and camera.target is None:
        offsets = centres.copy()
        offsets[:, 2] = 0.0  # follow horizontally; the height stays that of the whole motion
        pts = (points - offsets[:, None, :]).reshape(-1, 3)
    else:
        offsets = np.zeros((1, 3))
        pts = points.reshape(-1, 3)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    target = np.asarray(camera.target, np.float64) if camera.target is not None else 0.5 * (lo + hi)
    radius = max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
    distance = camera.distance or radius / np.sin(np.arctan(min(tan_v, tan_h)))
    if camera.distance is None or camera.target is None:
        for _ in range(6):
            eye = target + distance * back
            u, v = _tangents(pts, eye, right, up, forward)
            if camera.target is None:  # centre the bounding box
                target = target + distance * (0.5 * (u.max() + u.min()) * right + 0.5 * (v.max() + v.min()) * up)
                eye = target + distance * back
                u, v = _tangents(pts, eye, right, up, forward)
            if camera.distance is None:
                scale = max(np.ptp(u) / (2 * tan_h * FILL), np.ptp(v) / (2 * tan_v * FILL), 1e-3)
                depth_spread = float(np.max(np.abs((pts - target) @ forward)))
                distance = max(scale * distance, depth_spread * 1.05 + 1e-3)
    targets = target + offsets if follow and camera.target is None else target[None, :]
    return View(eye=targets + distance * back, target=targets, right=right, up=up, forward=forward,
                focal=0.5 * h / tan_v, size=(int(w), int(h)), distance=float(distance))


__all__ = ["FILL", "Camera", "View", "fit"]
