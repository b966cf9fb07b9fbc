"""Rotation matrices from the parameterizations model files use, in NumPy (for the loaders and
the model builder; traced code uses :mod:`sodyn.spatial`)."""

from __future__ import annotations

import numpy as np


def quat_to_matrix(q) -> np.ndarray:
    """The rotation of a quaternion ``[w, x, y, z]`` (normalized first)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def axis_angle_to_matrix(axis, angle: float) -> np.ndarray:
    """Rodrigues' formula ``I + sin θ ã + (1 − cos θ) ã²`` for ``axis`` (normalized first)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k


def rpy_to_matrix(rpy) -> np.ndarray:
    """Roll-pitch-yaw (URDF) to a rotation: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def as_rotation(rotation, where: str) -> np.ndarray:
    """``rotation`` (a 3×3 matrix, a ``[w, x, y, z]`` quaternion, or ``None`` for the identity) as
    a rotation matrix ``R``; a ``ValueError`` naming ``where`` unless ``R`` is finite and proper
    (``‖R Rᵀ − 𝟙‖_max ≤ 1e-6`` and ``det R ≥ 0``)."""
    r = np.asarray(rotation if rotation is not None else np.eye(3), dtype=np.float64)
    if r.shape == (4,):  # quaternion wxyz
        r = quat_to_matrix(r)
    if r.shape != (3, 3) or not np.all(np.isfinite(r)):
        raise ValueError(f"{where}: rotation must be a finite 3x3 matrix or a wxyz quaternion, got {rotation!r}")
    if np.max(np.abs(r @ r.T - np.eye(3))) > 1e-6 or np.linalg.det(r) < 0:
        raise ValueError(f"{where}: rotation is not a proper orthonormal matrix")
    return r
