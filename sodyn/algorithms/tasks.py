"""Operational-space tasks (Jain Ch. 10): which frames, which rows, in which axes, and their
kinematics ``J`` and ``J̇ v``.

A task is a frame (a "node" ``O_t`` attached to a body ``b_t``) whose velocity the task space
follows: :class:`FrameTask` (6D: ``[ω; v]`` of the frame) and :class:`PointTask` (3D: the
velocity of the frame's origin).  Its Jacobian is ``J_t = B_t* φ* H*`` (eq. 10.1), ``B_t*`` the
rigid transform from the body's frame to the task frame.  ``reference="local"`` (default)
expresses the task in the frame's own axes, ``"world_aligned"`` in world axes at the frame's
origin (Pinocchio's ``LOCAL_WORLD_ALIGNED``), exactly as :func:`sodyn.frame_jacobian`: the
local rows rotated by ``blockdiag(R_t, R_t)``, ``R_t`` the frame's world rotation.

Everywhere a ``tasks`` argument is accepted, it may be one task or a sequence of tasks; a task
may also be written as a frame name (a 6D local frame task) or a pair ``(frame, "6d" | "3d")``
or a triple ``(frame, "6d" | "3d", reference)``.  Rows of ``J`` (and of ``Λ``) follow the task
order, each task contributing ``dim`` rows (angular first for 6D tasks; a point task keeps the
linear rows ``3:6`` of its frame's).

``J̇ v`` is the task acceleration at zero joint acceleration: for ``"local"`` the frame's
spatial acceleration, for ``"world_aligned"`` the classical acceleration ``[ω̇; p̈]``, since
``d/dt (R v_local) = R (v̇_local + ω × v_local)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.algorithms.common import check_vector
from sodyn.algorithms.frame_jacobians import classical_term, frame_jacobians, frame_motions
from sodyn.algorithms.kinematics import forward_kinematics
from sodyn.model import Model

_REFERENCES = ("local", "world_aligned")


# ---------------------------------------------------------------------------
# task specification
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FrameTask:
    """A 6D task: the spatial velocity ``[ω; v]`` of a frame (by name or index)."""

    frame: str | int
    reference: str = "local"

    @property
    def dim(self) -> int:
        return 6


@dataclasses.dataclass(frozen=True)
class PointTask:
    """A 3D task: the linear velocity of a frame's origin (a point contact, a foot, ...)."""

    frame: str | int
    reference: str = "local"

    @property
    def dim(self) -> int:
        return 3


Task = FrameTask | PointTask


class ResolvedTask(NamedTuple):
    """A task checked against a model (static, Python values)."""

    frame: int
    body: int
    dim: int
    reference: str
    name: str


def _as_task(spec) -> Task:
    if isinstance(spec, (FrameTask, PointTask)):
        return spec
    if isinstance(spec, (str, int, np.integer)):
        return FrameTask(spec)
    if isinstance(spec, tuple) and len(spec) in (2, 3):
        frame, kind = spec[0], spec[1]
        reference = spec[2] if len(spec) == 3 else "local"
        kind = str(kind).lower()
        if kind in ("6d", "frame", "6"):
            return FrameTask(frame, reference)
        if kind in ("3d", "point", "3"):
            return PointTask(frame, reference)
        raise ValueError(f"task kind must be '6d' or '3d', got {spec[1]!r} in {spec!r}")
    raise TypeError(
        f"a task must be a FrameTask, a PointTask, a frame name, or (frame, '6d'|'3d'), got {spec!r}"
    )


def resolve_tasks(model: Model, tasks) -> tuple[ResolvedTask, ...]:
    """Check ``tasks`` against ``model``: known frames, not on the world, non-empty."""
    if isinstance(tasks, (FrameTask, PointTask, str, int, np.integer)) or (
        isinstance(tasks, tuple) and len(tasks) in (2, 3) and isinstance(tasks[1], str)
        and str(tasks[1]).lower() in ("6d", "3d", "frame", "point")
    ):
        tasks = [tasks]
    tasks = [_as_task(t) for t in tasks]
    if not tasks:
        raise ValueError("the task list is empty: give at least one FrameTask or PointTask")
    out = []
    for t in tasks:
        if t.reference not in _REFERENCES:
            raise ValueError(f"task reference must be 'local' or 'world_aligned', got {t.reference!r}")
        f = model.frame_id(t.frame)  # raises ValueError for an unknown frame
        b = int(model.frame_body[f])
        if b < 0:
            raise ValueError(
                f"task frame {model.frame_names[f]!r} is attached to the world; it does not move "
                "and has no operational-space inertia"
            )
        out.append(ResolvedTask(f, b, t.dim, t.reference, model.frame_names[f]))
    return tuple(out)


def resolve_call(model: Model, q, tasks) -> tuple[jax.Array, tuple[ResolvedTask, ...]]:
    """The checked ``q`` and resolved ``tasks`` of a public call."""
    resolved = resolve_tasks(model, tasks)
    q = check_vector(model, q, model.nq, "q")
    return q, resolved


def task_dimension(model: Model, tasks) -> int:
    """Total number of task rows ``m = Σ dim_t``."""
    return sum(t.dim for t in resolve_tasks(model, tasks))


def nearest_common_ancestors(parent: np.ndarray, bodies: Sequence[int]) -> np.ndarray:
    """Static ``(T, T)`` table of the nearest common ancestor-or-self (``-1``: different trees)."""

    def chain(b):
        out = []
        while b >= 0:
            out.append(int(b))
            b = int(parent[b])
        return out

    chains = [chain(b) for b in bodies]
    t = len(bodies)
    nca = np.full((t, t), -1, dtype=np.int64)
    for i in range(t):
        anc = set(chains[i])
        for j in range(t):
            for c in chains[j]:
                if c in anc:
                    nca[i, j] = c
                    break
    return nca


def tasks_share_their_body(model: Model, tasks: Sequence[ResolvedTask]) -> bool:
    """Whether every pair of tasks on one tree sits on one body (e.g. a single task).

    Then each pair's nearest common ancestor is the tasks' own body ``b``, where
    ``Ψ_t(b) = B_t``, and the blocks of ``Λ⁻¹`` are ``B_s* Υ(b) B_t``: no Ψ gather is needed.
    """
    bodies = np.array([t.body for t in tasks], dtype=np.int64)
    related = nearest_common_ancestors(model.topology.parent, bodies.tolist()) >= 0
    return bool(np.all((bodies[:, None] == bodies[None, :]) | ~related))


# ---------------------------------------------------------------------------
# task rows: references and row selection
# ---------------------------------------------------------------------------


def row_selection(tasks: Sequence[ResolvedTask]) -> np.ndarray:
    """Indices into the stacked ``6T`` local rows that make up the task rows."""
    rows = []
    for i, t in enumerate(tasks):
        rows.extend(range(6 * i, 6 * i + 6) if t.dim == 6 else range(6 * i + 3, 6 * i + 6))
    return np.asarray(rows, dtype=np.int64)


def reference_rotations(tasks: Sequence[ResolvedTask], task_rot: jax.Array) -> jax.Array:
    """Per task, the 6×6 map from local to the task's reference axes (``(T, 6, 6)``)."""
    dtype = task_rot.dtype
    eye = jnp.eye(3, dtype=dtype)
    z = jnp.zeros((3, 3), dtype)
    out = []
    for i, t in enumerate(tasks):
        r = task_rot[i] if t.reference == "world_aligned" else eye
        out.append(jnp.block([[r, z], [z, r]]))
    return jnp.stack(out)


def to_task_rows(tasks: Sequence[ResolvedTask], task_rot: jax.Array, x_local: jax.Array) -> jax.Array:
    """Rotate stacked local rows ``(T, 6, ...)`` to the tasks' references and select task rows."""
    rot = reference_rotations(tasks, task_rot)
    x = jnp.sum(rot.reshape(rot.shape + (1,) * (x_local.ndim - 2)) * x_local[:, None], axis=2)
    x = x.reshape((6 * len(tasks),) + x.shape[2:])
    return x[row_selection(tasks)]


# ---------------------------------------------------------------------------
# task kinematics: J and J̇ v
# ---------------------------------------------------------------------------


def task_rotations(model: Model, q, tasks: Sequence[ResolvedTask]) -> jax.Array:
    """``(T, 3, 3)``: the world rotation of each task frame."""
    return forward_kinematics(model, q).frame.rotation[np.array([t.frame for t in tasks], dtype=np.int64)]


def stacked_task_jacobian(model: Model, q, tasks: Sequence[ResolvedTask], task_rot: jax.Array) -> jax.Array:
    """``J`` ``(m, nv)``: the tasks' frame Jacobians (:func:`sodyn.frame_jacobians`) in their
    references, task rows selected."""
    local = frame_jacobians(model, q, [t.frame for t in tasks], "local")  # (T, 6, nv)
    return to_task_rows(tasks, task_rot, local)


def stacked_task_jdot_v(model: Model, q, v, tasks: Sequence[ResolvedTask], task_rot: jax.Array) -> jax.Array:
    """``J̇ v`` ``(m,)`` of resolved ``tasks`` (module docstring), task rows selected: per task the
    frame's acceleration at zero joint acceleration, plus the classical term ``[0; ω × v]`` for
    world-aligned tasks, rotated to the references."""
    vf, af = frame_motions(model, q, v, None, [t.frame for t in tasks])
    classical = jnp.asarray([t.reference == "world_aligned" for t in tasks])[:, None]
    return to_task_rows(tasks, task_rot, af + jnp.where(classical, classical_term(vf), 0.0))


def task_jacobian(model: Model, q, tasks) -> jax.Array:
    """The stacked task Jacobian ``J`` ``(m, nv)`` (rows as in :func:`sodyn.operational_space_inertia`)."""
    q, tasks = resolve_call(model, q, tasks)
    return stacked_task_jacobian(model, q, tasks, task_rotations(model, q, tasks))


def task_jdot_v(model: Model, q, v, tasks) -> jax.Array:
    """``J̇ v`` ``(m,)``: the exact time derivative of ``J`` applied to ``v``.

    For ``reference="local"`` this is the frame's spatial acceleration (body-frame derivative)
    at zero joint acceleration; for ``"world_aligned"`` the classical acceleration
    ``[ω̇; p̈]`` in world axes, since ``d/dt (R v_local) = R (v̇_local + ω × v_local)``.
    """
    q, tasks = resolve_call(model, q, tasks)
    v = check_vector(model, v, model.nv, "v", q.dtype)
    return stacked_task_jdot_v(model, q, v, tasks, task_rotations(model, q, tasks))


__all__ = [
    "FrameTask",
    "PointTask",
    "ResolvedTask",
    "Task",
    "nearest_common_ancestors",
    "reference_rotations",
    "resolve_call",
    "resolve_tasks",
    "row_selection",
    "stacked_task_jacobian",
    "stacked_task_jdot_v",
    "task_dimension",
    "task_jacobian",
    "task_jdot_v",
    "task_rotations",
    "tasks_share_their_body",
    "to_task_rows",
]
