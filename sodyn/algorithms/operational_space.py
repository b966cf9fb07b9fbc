"""Operational-space dynamics by the SOA Ω recursions (Jain Ch. 10; GTF §6.2).

Task frames ("nodes" ``O_t``, each attached to a body ``b_t``) have the Jacobian
``J = B* φ* H*`` (eq. 10.1), and the *operational-space compliance* (eq. 10.5)

    Λ⁻¹ = J 𝓜⁻¹ J* = B* Ω B,        Ω = ψ* H* D⁻¹ H ψ          (10.11)–(10.13)

where ``Ω`` is the extended operational-space compliance.  Its blocks are (Lemma 10.1,
eq. 10.17)

    Ω(i, j) = ψ*(c, i) Υ(c) ψ(c, j),    c = the nearest common ancestor-or-self of i, j,

with the *compliance kernel* ``Υ`` from one base-to-tips scatter (eq. 10.16, in the cheaper
form of Alg. 10.3 / eqs. 10.19–10.22)

    Υ⁺(k) = φ*(℘(k), k) Υ(℘(k)) φ(℘(k), k)                        (0 at the roots)
    Z = Υ⁺(k) G(k),  L = D⁻¹(k) + G*(k) Z,  Υ(k) = Υ⁺(k) + H*(k) (L H(k) − Z*) − Z H(k)

(algebraically ``Υ(k) = ψ*(℘(k),k) Υ(℘(k)) ψ(℘(k),k) + H*(k) D⁻¹(k) H(k)``), reusing the
articulated-body quantities ``P, D, G`` of the Riccati gather.  The ψ-path products from each
task body up to each of its ancestors, ``Ψ_t(k) = ψ(k, b_t) B_t`` (zero where ``k`` is not an
ancestor-or-self of ``b_t``), are one tips-to-base gather carrying one 6×6 block per task:

    Ψ_t(k) = [k = b_t] B_t + Σ_{c ∈ children(k)} φ(k, c) τ̄(c) Ψ_t(c).

The block of ``Λ⁻¹`` for a task pair ``(s, t)`` is then ``Ψ_s(c)* Υ(c) Ψ_t(c)`` with the
static nearest common ancestor ``c`` (eq. 10.18, Alg. 10.2); tasks on different trees of a
forest get a zero block.  ``𝓜`` and ``𝓜⁻¹`` are never formed.

**Cost** for ``n`` bodies and ``T`` tasks: the Riccati gather is ``O(n)``.  ``Υ`` is needed
only at the nearest common ancestors and ``Ψ_t`` vanishes off the path from ``b_t`` to the
base, so the Υ scatter and the Ψ gather run on the subtree of the task bodies' ``n_a``
ancestors alone (:func:`sodyn.topology.ancestor_subtree`; a quadruped's foot has 4 of 13,
a humanoid's hand 10 of 45): ``O(n_a)`` and ``O(n_a · T)`` (one 6×6 product per body and
task).  The pair blocks are ``O(T²)``; the final Cholesky solve for ``Λ`` is ``O(m³)`` with
``m = Σ dim_t``.  The same Ψ gather also gives ``𝓜⁻¹ J*`` by one more scatter over the whole
tree (the innovations/acceleration sweep of Alg. 9.5 with ``m`` right-hand sides,
``O(n · m)``) and the Jacobian ``J`` itself (the same gather with ``φ`` in place of ``ψ``).
When all tasks on one tree sit on one body ``b`` (a single end-effector task, say), every
pair's common ancestor is ``b`` itself, where ``Ψ_t(b) = B_t``: ``Λ⁻¹`` and ``Λ`` then skip
the Ψ gather and cost the Riccati gather and the Υ scatter alone.

Tasks
-----
:class:`FrameTask` (6D: ``[ω; v]`` of the frame) and :class:`PointTask` (3D: the velocity of
the frame's origin).  ``reference="local"`` (default) expresses the task in the frame's own
axes, ``"world_aligned"`` in world axes at the frame's origin (Pinocchio's
``LOCAL_WORLD_ALIGNED``), exactly as :func:`sodyn.frame_jacobian`.  Everywhere a ``tasks``
argument is accepted, it may be one task or a sequence of tasks; a task may also be written
as a frame name (a 6D local frame task) or a pair ``(frame, "6d" | "3d")`` or a triple
``(frame, "6d" | "3d", reference)``.  Rows of ``Λ`` follow the task order, each task
contributing ``dim`` rows (angular first for 6D tasks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.articulated import ArticulatedBodies, RiccatiKernel, body_frames, riccati
from sodyn.algorithms.common import Levels, check_vector, model_params, prepare, restrict_levels
from sodyn.algorithms.kinematics import classical_term, forward_kinematics, frame_jacobians, frame_motions
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.sweeps import gather, in_slots, scatter
from sodyn.topology import (
    AncestorSubtree,
    Topology,
    ancestor_subtree,
    dofs_from_levels,
    extend_slots,
    restrict_kernel,
    restrict_slots,
)

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


def task_dimension(model: Model, tasks) -> int:
    """Total number of task rows ``m = Σ dim_t``."""
    return sum(t.dim for t in resolve_tasks(model, tasks))


def _nearest_common_ancestors(parent: np.ndarray, bodies: Sequence[int]) -> np.ndarray:
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


def _row_selection(tasks: Sequence[ResolvedTask]) -> np.ndarray:
    """Indices into the stacked ``6T`` local rows that make up the task rows."""
    rows = []
    for i, t in enumerate(tasks):
        rows.extend(range(6 * i, 6 * i + 6) if t.dim == 6 else range(6 * i + 3, 6 * i + 6))
    return np.asarray(rows, dtype=np.int64)


# ---------------------------------------------------------------------------
# kernel-wise helpers with extra (task, row) axes
# ---------------------------------------------------------------------------


def _expand(x: jax.Array, n: int) -> jax.Array:
    """Insert ``n`` axes after the slot axis (axis 0)."""
    return x.reshape(x.shape[:1] + (1,) * n + x.shape[1:])


def restrict_articulated(subtree: AncestorSubtree, ab: ArticulatedBodies) -> ArticulatedBodies:
    """The Riccati quantities of the bodies of ``subtree``, in its slot layout.  They are
    those of the whole tree (each depends on the body's descendants), only read on fewer
    bodies."""
    if subtree.is_whole_tree:
        return ab
    kernels = tuple(RiccatiKernel(*(restrict_kernel(subtree, k, x) for x in ab.kernels[f]))
                    for k, f in enumerate(subtree.full_kernel))
    slots = [None if x is None else restrict_slots(subtree, x) for x in (ab.P, ab.P_plus)]
    return ArticulatedBodies(kernels, *slots)


# ---------------------------------------------------------------------------
# the recursions
# ---------------------------------------------------------------------------


class TaskSweeps(NamedTuple):
    """Everything the operational-space functions share for one ``(q, tasks)`` (internal).

    ``levels`` and ``abi`` cover the whole tree; ``upsilon``, ``world_rotation`` and
    ``psi_rows`` only the ancestors of the task bodies (``subtree``; ``W'`` its slots), the
    only bodies where the Ω recursions have anything to compute.
    """

    levels: Levels
    abi: ArticulatedBodies
    subtree: AncestorSubtree
    sub_levels: Levels          # levels restricted to the subtree
    upsilon: jax.Array          # (1, W', 6, 6) Υ(k), body frame
    world_rotation: jax.Array   # (1, W', 3, 3) body rotations in the world
    psi_rows: jax.Array | None  # (1, W', T, 6, 6) rows of Ψ_t(k)* = B_t* ψ*(k, b_t); None: not needed
    task_rotation: jax.Array    # (T, 3, 3) world rotation of each task frame


def compliance_kernel(topo: Topology, levels: Levels, abi: ArticulatedBodies) -> tuple[jax.Array, jax.Array]:
    """The Υ scatter (Jain eq. 10.16 in the form of Alg. 10.3) and body world rotations, on
    the tree ``topo`` (a whole model's, or an :class:`~sodyn.topology.AncestorSubtree`'s with
    ``levels`` and ``abi`` restricted to it).

    Returns ``Υ`` ``(1, W, 6, 6)`` about each body frame and the world rotations ``(1, W, 3, 3)``.
    """
    dtype = levels.rel_p.dtype

    def step(parent, level):
        ups_p, rw_p = parent
        r, p = level.x
        ups_plus = spatial.compliance_to_child(r, p, ups_p)  # φ*(℘(k), k) Υ φ(℘(k), k)
        out = []
        for up, axes, ric in zip(level.per_kernel(ups_plus), *zip(*level.kernels)):
            z = contract("...ij,...kj->...ik", up, ric.G)  # Υ⁺ G, (Wk, 6, nv_k)
            ell = ric.D_inv + spatial.mm(ric.G, z)
            h = axes.row_matrix(ric.G.shape[:-2], ric.G.dtype)  # H, (Wk, nv_k, 6)
            ups = up + spatial.mtm(h, spatial.mm(ell, h) - spatial.transpose(z)) - spatial.mm(z, h)
            out.append(0.5 * (ups + spatial.transpose(ups)))
        ups = jnp.concatenate(out, axis=0)
        rw = spatial.mm(rw_p, r)
        return (ups, rw), tuple(zip(out, level.per_kernel(rw)))

    root = (jnp.zeros((6, 6), dtype), jnp.eye(3, dtype=dtype))
    return in_slots(scatter(topo, step, root, (levels.rel_r, levels.rel_p), tuple(zip(levels.axes, abi.kernels))))


def _frame_rows(model: Model, tasks: Sequence[ResolvedTask], dtype) -> jax.Array:
    """``(T, 6, 6)``: each task's ``B_t*`` (frame motion ← motion of its body)."""
    m = model_params(model, dtype)
    fids = np.array([t.frame for t in tasks], dtype=np.int64)
    return spatial.motion_transform_matrix(m.frame_rotation[fids], m.frame_translation[fids])


def _task_seeds(model: Model, subtree: AncestorSubtree, tasks: Sequence[ResolvedTask], dtype) -> jax.Array:
    """``(1, W', T, 6, 6)``: rows ``B_t*`` (frame motion ← body motion) at each task's body."""
    topo = subtree.topo
    xf = _frame_rows(model, tasks, dtype)
    n_t = len(tasks)
    flat = _subtree_slot(subtree, [t.body for t in tasks])
    seeds = jnp.zeros((topo.width, n_t, 6, 6), dtype)
    seeds = seeds.at[flat, np.arange(n_t)].set(xf)
    return seeds.reshape(topo.layout_shape + (n_t, 6, 6))


def _subtree_slot(subtree: AncestorSubtree, bodies) -> np.ndarray:
    """Compact slots in ``subtree``'s layout of (full-tree) ``bodies``, all in the subtree."""
    return subtree.topo.body_flat[subtree.local[np.asarray(bodies, dtype=np.int64)]]


def tasks_share_their_body(model: Model, tasks: Sequence[ResolvedTask]) -> bool:
    """Whether every pair of tasks on one tree sits on one body (e.g. a single task).

    Then each pair's nearest common ancestor is the tasks' own body ``b``, where
    ``Ψ_t(b) = B_t``, and the blocks of ``Λ⁻¹`` are ``B_s* Υ(b) B_t``: no Ψ gather is needed.
    """
    bodies = np.array([t.body for t in tasks], dtype=np.int64)
    related = _nearest_common_ancestors(model.topology.parent, bodies.tolist()) >= 0
    return bool(np.all((bodies[:, None] == bodies[None, :]) | ~related))


def task_sweeps(model: Model, q: jax.Array, tasks: Sequence[ResolvedTask], with_psi: bool = True) -> TaskSweeps:
    """Riccati gather, Υ scatter and the Ψ gather for ``tasks`` at ``q``.

    The Riccati gather covers the whole tree; the others only the task bodies' ancestors.
    ``with_psi=False`` skips the Ψ gather (``psi_rows`` is then ``None``), for tasks that share
    their body (:func:`tasks_share_their_body`).
    """
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    abi = riccati(model, body_frames(model, levels))
    bodies = sorted({t.body for t in tasks})
    subtree = ancestor_subtree(topo, tuple(bodies))
    sub_levels, sub_abi = restrict_levels(subtree, levels), restrict_articulated(subtree, abi)
    upsilon, rw = compliance_kernel(subtree.topo, sub_levels, sub_abi)
    m = model_params(model, dtype)
    fids = np.array([t.frame for t in tasks], dtype=np.int64)
    rw_body = rw.reshape((-1, 3, 3))[_subtree_slot(subtree, [t.body for t in tasks])]
    task_rot = spatial.mm(rw_body, m.frame_rotation[fids])
    if not with_psi:
        return TaskSweeps(levels, abi, subtree, sub_levels, upsilon, rw, None, task_rot)
    seeds = _task_seeds(model, subtree, tasks, dtype)

    def up(psi_c, level):
        r, p, seed = level.x
        psi = seed + psi_c  # rows: each row a body-frame force
        tb = []
        for f, axes, ric in zip(level.per_kernel(psi), *zip(*level.kernels)):
            nu = spatial.mv(_expand(ric.D_inv, 2), axes.transpose_times(f))
            tb.append(f - spatial.mtv(_expand(ric.U, 2), nu))  # τ̄ f = f − G H f
        tb = jnp.concatenate(tb, axis=0)
        return spatial.force_to_parent(r[:, None, None], p[:, None, None], tb), tuple(level.per_kernel(psi))

    psi_rows = in_slots(gather(
        subtree.topo, up, jnp.zeros((len(tasks), 6, 6), dtype), (sub_levels.rel_r, sub_levels.rel_p, seeds),
        tuple(zip(sub_levels.axes, sub_abi.kernels)),
    ))
    return TaskSweeps(levels, abi, subtree, sub_levels, upsilon, rw, psi_rows, task_rot)


def _rotation_6(tasks: Sequence[ResolvedTask], task_rot: jax.Array) -> jax.Array:
    """Per task, the 6×6 map from local to the task's reference axes (``(T, 6, 6)``)."""
    dtype = task_rot.dtype
    eye = jnp.eye(3, dtype=dtype)
    z = jnp.zeros((3, 3), dtype)
    out = []
    for i, t in enumerate(tasks):
        r = task_rot[i] if t.reference == "world_aligned" else eye
        out.append(jnp.block([[r, z], [z, r]]))
    return jnp.stack(out)


def _to_task_rows(tasks, task_rot, x_local: jax.Array) -> jax.Array:
    """Rotate stacked local rows ``(T, 6, ...)`` to the tasks' references and select task rows."""
    rot = _rotation_6(tasks, task_rot)
    x = jnp.sum(rot.reshape(rot.shape + (1,) * (x_local.ndim - 2)) * x_local[:, None], axis=2)
    x = x.reshape((6 * len(tasks),) + x.shape[2:])
    return x[_row_selection(tasks)]


def compliance_from_sweeps(model: Model, tasks, sw: TaskSweeps) -> jax.Array:
    """``Λ⁻¹`` ``(m, m)`` of resolved ``tasks`` from their :func:`task_sweeps`: per task pair
    ``(s, t)`` the block ``Ψ_s(c)* Υ(c) Ψ_t(c)`` at the nearest common ancestor ``c`` (eq. 10.18,
    Alg. 10.2; ``B_s* Υ(b) B_t`` when the tasks share their body, zero across trees), in the
    tasks' references, task rows selected."""
    n_t = len(tasks)
    nca = _nearest_common_ancestors(model.topology.parent, [t.body for t in tasks])
    related = nca >= 0
    c_flat = _subtree_slot(sw.subtree, np.where(related, nca, tasks[0].body))  # (T, T)
    ups = sw.upsilon.reshape((-1, 6, 6))
    ii, jj = np.meshgrid(np.arange(n_t), np.arange(n_t), indexing="ij")
    if sw.psi_rows is None:  # every related pair on one body c: Ψ_s(c)* = B_s*
        xf = _frame_rows(model, tasks, ups.dtype)
        a, b = xf[ii], xf[jj]
    else:
        psi = sw.psi_rows.reshape((-1, n_t, 6, 6))
        a = psi[c_flat, ii]  # (T, T, 6, 6) rows of Ψ_s(c)*
        b = psi[c_flat, jj]
    y = ups[c_flat]
    blocks = spatial.mm(a, spatial.mm(y, spatial.transpose(b)))  # Ψ_s* Υ_c Ψ_t
    blocks = jnp.where(jnp.asarray(related)[:, :, None, None], blocks, 0.0)
    rot = _rotation_6(tasks, sw.task_rotation)
    blocks = spatial.mm(rot[:, None], spatial.mm(blocks, spatial.transpose(rot)[None]))
    full = jnp.transpose(blocks, (0, 2, 1, 3)).reshape((6 * n_t, 6 * n_t))
    sel = _row_selection(tasks)
    full = full[sel][:, sel]
    return 0.5 * (full + full.T)


def minv_jt_from_sweeps(model: Model, tasks, sw: TaskSweeps) -> jax.Array:
    """``𝓜⁻¹ J*`` ``(nv, m)`` by the acceleration scatter of Alg. 9.5 with ``m`` right-hand sides.

    The innovations of a unit task force are ``ν = D⁻¹ H Ψ_t`` (already gathered), and
    ``θ̈(k) = ν(k) − D⁻¹ U* α⁺(k)``, ``α(k) = α⁺(k) + H* θ̈(k)``, ``α⁺ = φ* α(℘(k))``.
    """
    topo = model.topology
    levels, abi = sw.levels, sw.abi
    dtype = sw.upsilon.dtype
    n_t = len(tasks)

    def down(parent_acc, level):
        r, p, psi = level.x
        a_plus = spatial.motion_to_child(r[:, None, None], p[:, None, None], parent_acc)  # (W, T, 6, 6)
        qdd, motion = [], []
        pieces = zip(level.per_kernel(psi), level.per_kernel(a_plus), *zip(*level.kernels))
        for f, ak, axes, ric in pieces:
            hf = axes.transpose_times(f) - spatial.mv(_expand(ric.U, 2), ak)
            qk = spatial.mv(_expand(ric.D_inv, 2), hf)  # (Wk, T, 6, nv_k)
            qdd.append(qk)
            motion.append(axes.times(qk))
        acc = a_plus + jnp.concatenate(motion, axis=0)
        return acc, tuple(qdd)

    root = jnp.zeros((n_t, 6, 6), dtype)
    psi_rows = extend_slots(sw.subtree, sw.psi_rows)  # zero off the task bodies' ancestors
    qdd = scatter(topo, down, root, (levels.rel_r, levels.rel_p, psi_rows), tuple(zip(levels.axes, abi.kernels)))
    # per kernel (1, Wk, T, 6, nv_k) → (1, Wk, nv_k, T, 6)
    blocks = [jnp.moveaxis(b, -1, 2) for b in qdd]
    x = dofs_from_levels(topo, blocks)  # (nv, T, 6)
    x = jnp.moveaxis(x, 0, -1)  # (T, 6, nv)
    return _to_task_rows(tasks, sw.task_rotation, x).T


def stacked_task_jacobian(model: Model, q, tasks, task_rot: jax.Array) -> jax.Array:
    """``J`` ``(m, nv)``: the tasks' frame Jacobians (:func:`sodyn.frame_jacobians`) in their
    references, task rows selected."""
    local = frame_jacobians(model, q, [t.frame for t in tasks], "local")  # (T, 6, nv)
    return _to_task_rows(tasks, task_rot, local)


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def _prepare_call(model: Model, q, tasks):
    resolved = resolve_tasks(model, tasks)
    q = check_vector(model, q, model.nq, "q")
    return q, resolved


def operational_space_compliance(model: Model, q, tasks) -> jax.Array:
    """``Λ⁻¹ = J 𝓜⁻¹ J*`` ``(m, m)`` for one or several task frames (Jain eqs. 10.13–10.18).

    Computed by the Ω recursions (Υ scatter, Ψ gather, nearest-common-ancestor blocks; see
    the module docstring) in ``O(n · T + T²)``, without forming 𝓜 or 𝓜⁻¹.  Always defined
    (positive semi-definite); singular where the tasks are.
    """
    q, tasks = _prepare_call(model, q, tasks)
    sw = task_sweeps(model, q, tasks, with_psi=not tasks_share_their_body(model, tasks))
    return compliance_from_sweeps(model, tasks, sw)


def _regularized_inverse(a: jax.Array, regularization) -> jax.Array:
    """``(A + λ I)⁻¹`` of a symmetric PSD ``A`` (differentiable): closed form for the common sizes
    1, 3 and 6 (one point or frame task; :func:`sodyn.spatial.spd_inverse`, no LAPACK call, so
    :func:`sodyn.batch` may split it across CPU cores), otherwise by Cholesky."""
    lam = jnp.asarray(regularization, a.dtype)
    a = a + lam * jnp.eye(a.shape[0], dtype=a.dtype)
    if a.shape[0] in (1, 3, 6):
        return spatial.spd_inverse(a)
    c = jax.scipy.linalg.cho_factor(a, lower=True)
    inv = jax.scipy.linalg.cho_solve(c, jnp.eye(a.shape[0], dtype=a.dtype))
    return 0.5 * (inv + inv.T)


def operational_space_inertia(model: Model, q, tasks, regularization=0.0) -> jax.Array:
    """Operational-space inertia ``Λ = (J 𝓜⁻¹ J*)⁻¹`` ``(m, m)`` (Jain eq. 10.6).

    ``regularization = λ ≥ 0`` returns the damped inverse ``Λ_λ = (Λ⁻¹ + λ I)⁻¹`` (Tikhonov /
    damped least squares in task space): it equals ``Λ`` for ``λ = 0``, stays finite and
    smooth (its eigenvalues are at most ``1/λ``) at kinematic singularities and for redundant
    tasks (``rank J < m``), and is differentiable in ``q``, the model and ``λ``.  ``λ`` has the
    units of a compliance (1/kg for point tasks); mixed 6D tasks share one ``λ`` for both rows
    kinds.  The inverse is closed-form for m = 1, 3, 6 and a Cholesky solve otherwise, of the
    ``Λ⁻¹`` of :func:`operational_space_compliance`.

    Singular ``Λ⁻¹``: where ``Λ⁻¹ + λ I`` is singular to working precision (a kinematic
    singularity or redundant tasks with ``λ = 0``, e.g. UR5 or Panda at ``q = 0`` for a 6D
    frame task) the result is all NaN, never a finite but meaningless (indefinite, ~1/eps)
    matrix: detect it with ``jnp.isnan(Λ).any()`` and use ``λ > 0`` there.  The test is on the
    pivots ``d_k`` of the ``L D Lᵀ`` factorisation of ``A = Λ⁻¹ + λ I`` (:func:`ldl_pivots`):
    singular when some ``d_k ≤ 8 m ε A_kk`` (``ε`` the dtype's epsilon; the pivot relative to
    its own diagonal, so rows of different units are compared fairly; a rank-deficient PSD
    matrix has ``d_k`` at the round-off level, of either sign).
    """
    a = operational_space_compliance(model, q, tasks)
    lam = _regularized_inverse(a, regularization)
    shifted = a + jnp.asarray(regularization, a.dtype) * jnp.eye(a.shape[0], dtype=a.dtype)
    return jnp.where(singular_to_working_precision(shifted), jnp.nan, lam)


def ldl_pivots(a: jax.Array) -> jax.Array:
    """Pivots ``d`` ``(m,)`` of ``A = L D Lᵀ`` (``L`` unit lower triangular) of a symmetric ``A``
    without pivoting: unrolled scalar recurrences for ``m ≤ 12`` (no LAPACK call), else the
    squared diagonal of a Cholesky factor (NaN where ``A`` is not positive definite)."""
    m = a.shape[-1]
    if m > 12:
        return jnp.diagonal(jnp.linalg.cholesky(a), axis1=-2, axis2=-1) ** 2
    low: dict[tuple[int, int], jax.Array] = {}
    d: list[jax.Array] = []
    for j in range(m):
        d.append(a[..., j, j] - sum((low[j, k] ** 2 * d[k] for k in range(j)), jnp.zeros((), a.dtype)))
        for i in range(j + 1, m):
            low[i, j] = (a[..., i, j] - sum((low[i, k] * low[j, k] * d[k] for k in range(j)),
                                            jnp.zeros((), a.dtype))) / d[j]
    return jnp.stack(d, axis=-1)


def singular_to_working_precision(a: jax.Array) -> jax.Array:
    """Whether a symmetric PSD ``A`` ``(m, m)`` is singular in its dtype: a pivot ``d_k`` of its
    ``L D Lᵀ`` not above ``8 m ε A_kk``, or a non-finite one (:func:`operational_space_inertia`)."""
    m = a.shape[-1]
    pivots = ldl_pivots(jax.lax.stop_gradient(a))
    diag = jnp.diagonal(jax.lax.stop_gradient(a), axis1=-2, axis2=-1)
    tol = 8 * m * jnp.finfo(a.dtype).eps
    return jnp.any(~(pivots > tol * jnp.abs(diag)), axis=-1)


class OperationalSpaceDynamics(NamedTuple):
    """Result of :func:`operational_space_dynamics` (rows follow the task order).

    ``jacobian`` ``J`` (m, nv); ``compliance`` ``Λ⁻¹``; ``inertia`` ``Λ`` (regularized as
    requested); ``minv_jt`` ``𝓜⁻¹J*`` (nv, m); ``jbar`` the dynamically consistent generalized
    inverse ``J̄ = 𝓜⁻¹ J* Λ`` (nv, m); ``bias`` the task-space bias force ``μ + p = J̄* C − Λ J̇ v``
    (Coriolis/centrifugal and gravity, with damping and ``f_ext`` if ``C`` includes them);
    ``jdot_v`` ``J̇ v`` (the task acceleration at zero joint acceleration); ``task_velocity``
    ``J v``.
    """

    jacobian: jax.Array
    compliance: jax.Array
    inertia: jax.Array
    minv_jt: jax.Array
    jbar: jax.Array
    bias: jax.Array
    jdot_v: jax.Array
    task_velocity: jax.Array


def task_jacobian(model: Model, q, tasks) -> jax.Array:
    """The stacked task Jacobian ``J`` ``(m, nv)`` (rows as in :func:`operational_space_inertia`)."""
    q, tasks = _prepare_call(model, q, tasks)
    return stacked_task_jacobian(model, q, tasks, _task_rotations(model, q, tasks))


@full_precision
def dynamically_consistent_inverse(model: Model, q, tasks, regularization=0.0) -> jax.Array:
    """``J̄ = 𝓜⁻¹ J* Λ`` ``(nv, m)`` (Khatib's dynamically consistent generalized inverse).

    ``𝓜⁻¹ J*`` comes from the acceleration scatter on the gathered Ψ (O(n · m)), ``Λ`` from
    :func:`operational_space_inertia` with the same ``regularization``.
    """
    q, tasks = _prepare_call(model, q, tasks)
    sw = task_sweeps(model, q, tasks)
    lam = _regularized_inverse(compliance_from_sweeps(model, tasks, sw), regularization)
    return minv_jt_from_sweeps(model, tasks, sw) @ lam


def _jdot_v_local(model: Model, q, v, tasks) -> jax.Array:
    """Per task, ``J̇ v`` in the frame's own axes ``(T, 6)`` (classical for world-aligned tasks)."""
    vf, af = frame_motions(model, q, v, None, [t.frame for t in tasks])
    classical = jnp.asarray([t.reference == "world_aligned" for t in tasks])[:, None]
    return af + jnp.where(classical, classical_term(vf), 0.0)


def _task_rotations(model: Model, q, tasks) -> jax.Array:
    """``(T, 3, 3)``: the world rotation of each task frame."""
    return forward_kinematics(model, q).frame.rotation[np.array([t.frame for t in tasks], dtype=np.int64)]


def task_jdot_v(model: Model, q, v, tasks) -> jax.Array:
    """``J̇ v`` ``(m,)``: the exact time derivative of ``J`` applied to ``v``.

    For ``reference="local"`` this is the frame's spatial acceleration (body-frame derivative)
    at zero joint acceleration; for ``"world_aligned"`` the classical acceleration
    ``[ω̇; p̈]`` in world axes, since ``d/dt (R v_local) = R (v̇_local + ω × v_local)``.
    """
    q, tasks = _prepare_call(model, q, tasks)
    v = check_vector(model, v, model.nv, "v", q.dtype)
    return _to_task_rows(tasks, _task_rotations(model, q, tasks), _jdot_v_local(model, q, v, tasks))


def operational_space_bias(model: Model, q, v, tasks, regularization=0.0, f_ext=None) -> jax.Array:
    """Task-space bias force ``μ + p = J̄* C − Λ J̇ v`` ``(m,)`` (Jain's ``C_os`` at ``T = 0``, eq. 10.8).

    ``C = sodyn.bias_forces(model, q, v, f_ext)`` (Coriolis, centrifugal, gravity, damping,
    ``−f_ext``).  With it the task-space equation of motion is ``Λ ẍ + (μ + p) = F`` for
    joint torques ``τ = J* F`` (plus torques in the dynamically consistent null space).
    """
    return operational_space_dynamics(model, q, v, tasks, regularization, f_ext).bias


@full_precision
def operational_space_dynamics(model: Model, q, v, tasks, regularization=0.0, f_ext=None) -> OperationalSpaceDynamics:
    """All operational-space quantities at once, sharing one set of sweeps."""
    from sodyn.algorithms.inverse_dynamics import bias_forces

    q, tasks = _prepare_call(model, q, tasks)
    v = check_vector(model, v, model.nv, "v", q.dtype)
    sw = task_sweeps(model, q, tasks)
    jac = stacked_task_jacobian(model, q, tasks, sw.task_rotation)
    comp = compliance_from_sweeps(model, tasks, sw)
    lam = _regularized_inverse(comp, regularization)
    minv_jt = minv_jt_from_sweeps(model, tasks, sw)
    jbar = minv_jt @ lam
    c = bias_forces(model, q, v, f_ext)
    jdv = _to_task_rows(tasks, sw.task_rotation, _jdot_v_local(model, q, v, tasks))
    bias = jbar.T @ c - lam @ jdv
    return OperationalSpaceDynamics(jac, comp, lam, minv_jt, jbar, bias, jdv, jac @ v)


# ---------------------------------------------------------------------------
# gradient of log det 𝓜 (the Fixman term)
# ---------------------------------------------------------------------------


def _motion_cross_matrix(h: jax.Array) -> jax.Array:
    """``crm(h)``: the 6×6 matrix of ``x ↦ h ×ₘ x`` for motion vectors ``h = [w; u]``."""
    w, u = spatial.skew(h[..., :3]), spatial.skew(h[..., 3:])
    z = jnp.zeros_like(w)
    return jnp.concatenate(
        [jnp.concatenate([w, z], -1), jnp.concatenate([u, w], -1)], -2
    )


def log_det_mass_matrix_gradient(model: Model, q) -> jax.Array:
    """``∂ log det 𝓜 / ∂θ`` ``(nv,)`` in closed form from ``P`` and ``Υ`` (SLD §2.7), O(n).

    For a dof of body ``k`` whose motion axis (column of ``H*(k)``, body frame) is
    ``h = [h_ω; h_v]``,

        ∂ log det 𝓜 / ∂θ = 2 tr( P(k) Υ(k) crf(h) ),   crf(h) = [[h̃_ω, h̃_v], [0, h̃_ω]],

    the spatial *force* cross-product matrix of ``h`` (``crf(h) = −crm(h)*``).  For a revolute
    joint about the body origin ``crf(h) = blockdiag(h̃_ω, h̃_ω)``: SLD's slide formula, which
    holds in any frame at 𝕆_k.  Derivation: ``∂φ*(℘(k),k)/∂θ = −crm(h) φ*(℘(k),k)`` in body
    coordinates, so ``∂ log det 𝓜 = 2 tr(∂E_φ · φ M φ* Ω)``; ``P Υ`` transforms by a similarity
    under a change of frame and so does ``crf(h)``, which makes the trace frame-independent and
    covers prismatic and helical joints and the translational dofs of planar and free joints
    too (no separate term as in Jain eq. 18.68 is needed in this form; checked against
    automatic differentiation on random trees with every joint type).

    The derivative is along the joint's *velocity* coordinates (``q ⊕ ε e_j`` as in
    :func:`sodyn.integrate`): for one-dof joints that is exactly
    ``jax.grad(log_det_mass_matrix)(q)``; for spherical, planar and free joints it is the
    tangent-space derivative (not the derivative with respect to quaternion entries).
    Costs one Riccati gather and one Υ scatter.  The Fixman corrective force is
    ``−(k_B T / 2)`` times this gradient.
    """
    q = check_vector(model, q, model.nq, "q")
    return _log_det_gradient_closed_form(model, q)


def _log_det_gradient_closed_form(model: Model, q: jax.Array) -> jax.Array:
    topo = model.topology
    dtype = q.dtype
    levels = prepare(model, q)
    abi = riccati(model, body_frames(model, levels), with_inertias=True)
    upsilon, _ = compliance_kernel(topo, levels, abi)
    py = spatial.mm(abi.P, upsilon)  # (1, W, 6, 6)
    blocks = []
    for axes, (_, s0, s1) in zip(levels.axes, topo.kernel_slots):
        cols = axes.row_matrix((1, s1 - s0), dtype)  # (1, Wk, nv_k, 6)
        crm = _motion_cross_matrix(cols)  # (1, Wk, nv_k, 6, 6)
        # tr(PΥ crf(h)) with crf(h) = −crm(h)*: tr(A crf) = −Σ A ∘ crm
        g = -2.0 * jnp.sum(py[:, s0:s1, None] * crm, axis=(-1, -2))
        blocks.append(g)
    return dofs_from_levels(topo, blocks)
