"""The Ω recursions of operational-space dynamics (Jain Ch. 10; GTF §6.2): the sweeps behind
``Λ⁻¹``, ``𝓜⁻¹ J*`` and :func:`sodyn.log_det_mass_matrix_gradient`.

Task frames (:mod:`sodyn.algorithms.tasks`; "nodes" ``O_t``, each attached to a body ``b_t``)
have the Jacobian ``J = B* φ* H*`` (eq. 10.1), and the *operational-space compliance* (eq. 10.5)

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
forest get a zero block.  ``𝓜`` and ``𝓜⁻¹`` are never formed.  The same Ψ gives ``𝓜⁻¹ J*`` by
the acceleration scatter of Alg. 9.5 with one right-hand side per task row: the innovations
of a unit task force are ``ν = D⁻¹ H Ψ_t``, and

    α⁺(k) = φ*(℘(k), k) α(℘(k)),   θ̈(k) = ν(k) − D⁻¹(k) U*(k) α⁺(k),   α(k) = α⁺(k) + H*(k) θ̈(k).

**Cost** for ``n`` bodies and ``T`` tasks: the Riccati gather is ``O(n)``.  ``Υ`` is needed
only at the nearest common ancestors and ``Ψ_t`` vanishes off the path from ``b_t`` to the
base, so the Υ scatter and the Ψ gather run on the subtree of the task bodies' ``n_a``
ancestors alone (:func:`sodyn.topology.ancestor_subtree`; a quadruped's foot has 4 of 13,
a humanoid's hand 10 of 45): ``O(n_a)`` and ``O(n_a · T)`` (one 6×6 product per body and
task).  The pair blocks are ``O(T²)``.  ``𝓜⁻¹ J*`` costs one more scatter over the whole tree,
``O(n · m)`` with ``m = Σ dim_t``.  When all tasks on one tree sit on one body ``b`` (a single
end-effector task, say), every pair's common ancestor is ``b`` itself, where ``Ψ_t(b) = B_t``:
``Λ⁻¹`` then skips the Ψ gather and costs the Riccati gather and the Υ scatter alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.algorithms.articulated import ArticulatedBodies, RiccatiKernel, riccati
from sodyn.algorithms.common import Levels, model_params, prepare, restrict_levels
from sodyn.algorithms.conventions import body_frames, expand_slots, pose_force_to_parent
from sodyn.algorithms.tasks import (
    ResolvedTask,
    nearest_common_ancestors,
    reference_rotations,
    row_selection,
    to_task_rows,
)
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.sweeps import Fields, gather, in_slots, scatter
from sodyn.topology import (
    AncestorSubtree,
    Topology,
    ancestor_subtree,
    dofs_from_levels,
    extend_slots,
    restrict_kernel,
    restrict_slots,
)


class TaskSweeps(NamedTuple):
    """Everything the operational-space functions share for one ``(q, tasks)``.

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
# the sweeps: Υ (scatter), Ψ (gather), 𝓜⁻¹ J* (scatter)
# ---------------------------------------------------------------------------


def compliance_kernel(topo: Topology, levels: Levels, abi: ArticulatedBodies) -> tuple[jax.Array, jax.Array]:
    """The Υ scatter (Jain eq. 10.16 in the form of Alg. 10.3) and body world rotations, on
    the tree ``topo`` (a whole model's, or an :class:`~sodyn.topology.AncestorSubtree`'s with
    ``levels`` and ``abi`` restricted to it).

    Returns ``Υ`` ``(1, W, 6, 6)`` about each body frame and the world rotations ``(1, W, 3, 3)``.
    """
    dtype = levels.rel_p.dtype

    def kernel_step(kernel, ups_plus, rw):
        axes, ric = kernel.x.axes, kernel.x.factors
        z = contract("...ij,...kj->...ik", ups_plus, ric.G)  # Z = Υ⁺ G, (w, 6, nv_k)
        ell = ric.D_inv + spatial.mm(ric.G, z)  # L = D⁻¹ + G* Z
        h = axes.row_matrix(ric.G.shape[:-2], ric.G.dtype)  # H, (w, nv_k, 6)
        ups = ups_plus + spatial.mtm(h, spatial.mm(ell, h) - spatial.transpose(z)) - spatial.mm(z, h)
        ups = 0.5 * (ups + spatial.transpose(ups))
        return ups, (ups, rw)

    def step(parent, level):
        ups_p, rw_p = parent
        r, p = level.x.pose
        rw = spatial.mm(rw_p, r)
        ups, outs = level.each_kernel(kernel_step, spatial.compliance_to_child(r, p, ups_p), rw)  # Υ⁺ = φ* Υ φ
        return (ups, rw), outs

    root = (jnp.zeros((6, 6), dtype), jnp.eye(3, dtype=dtype))
    xs = Fields(pose=(levels.rel_r, levels.rel_p))
    return in_slots(scatter(topo, step, root, xs, Fields(axes=levels.axes, factors=abi.kernels)))


def psi_gather(subtree: AncestorSubtree, levels: Levels, abi: ArticulatedBodies, seeds: jax.Array) -> jax.Array:
    """The Ψ gather on ``subtree`` (``levels`` and ``abi`` restricted to it): the rows of
    ``Ψ_t(k)* = B_t* ψ*(k, b_t)`` ``(1, W', T, 6, 6)`` from the ``seeds`` ``B_t*`` at the task
    bodies, ``Ψ(k) = seed(k) + Σ_c φ(k, c) τ̄(c) Ψ(c)`` with ``τ̄ Ψ = Ψ − U D⁻¹ H Ψ``."""

    def kernel_step(kernel, psi):
        axes, ric = kernel.x.axes, kernel.x.factors
        nu = spatial.mv(expand_slots(ric.D_inv, 2), axes.transpose_times(psi))
        return psi - spatial.mtv(expand_slots(ric.U, 2), nu), psi  # τ̄ Ψ

    def step(psi_c, level):
        tb, outs = level.each_kernel(kernel_step, level.x.seed + psi_c)  # rows: each a body-frame force
        return pose_force_to_parent(level.x.pose, tb), outs

    zero = jnp.zeros(seeds.shape[2:], seeds.dtype)
    xs = Fields(pose=(levels.rel_r, levels.rel_p), seed=seeds)
    return in_slots(gather(subtree.topo, step, zero, xs, Fields(axes=levels.axes, factors=abi.kernels)))


def minv_jt_from_sweeps(model: Model, tasks: Sequence[ResolvedTask], sw: TaskSweeps) -> jax.Array:
    """``𝓜⁻¹ J*`` ``(nv, m)`` by the acceleration scatter of Alg. 9.5 with ``m`` right-hand sides.

    The innovations of a unit task force are ``ν = D⁻¹ H Ψ_t`` (already gathered), and
    ``θ̈(k) = ν(k) − D⁻¹ U* α⁺(k)``, ``α(k) = α⁺(k) + H* θ̈(k)``, ``α⁺ = φ* α(℘(k))``.
    """
    topo = model.topology
    levels = sw.levels

    def kernel_step(kernel, psi, a_plus):
        axes, ric = kernel.x.axes, kernel.x.factors
        hf = axes.transpose_times(psi) - spatial.mv(expand_slots(ric.U, 2), a_plus)
        qdd = spatial.mv(expand_slots(ric.D_inv, 2), hf)  # (w, T, 6, nv_k)
        return axes.times(qdd), qdd

    def step(parent_acc, level):
        r, p = (expand_slots(x, 2) for x in level.x.pose)
        a_plus = spatial.motion_to_child(r, p, parent_acc)  # (w, T, 6, 6)
        motion, qdd = level.each_kernel(kernel_step, level.x.psi, a_plus)
        return a_plus + motion, qdd

    root = jnp.zeros((len(tasks), 6, 6), sw.upsilon.dtype)
    psi_rows = extend_slots(sw.subtree, sw.psi_rows)  # zero off the task bodies' ancestors
    xs = Fields(pose=(levels.rel_r, levels.rel_p), psi=psi_rows)
    qdd = scatter(topo, step, root, xs, Fields(axes=levels.axes, factors=sw.abi.kernels))
    x = dofs_from_levels(topo, [jnp.moveaxis(b, -1, 2) for b in qdd])  # (1, w, T, 6, nv_k) → (nv, T, 6)
    return to_task_rows(tasks, sw.task_rotation, jnp.moveaxis(x, 0, -1)).T


# ---------------------------------------------------------------------------
# task sweeps and Λ⁻¹
# ---------------------------------------------------------------------------


def _frame_rows(model: Model, tasks: Sequence[ResolvedTask], dtype) -> jax.Array:
    """``(T, 6, 6)``: each task's ``B_t*`` (frame motion ← motion of its body)."""
    m = model_params(model, dtype)
    fids = np.array([t.frame for t in tasks], dtype=np.int64)
    return spatial.motion_transform_matrix(m.frame_rotation[fids], m.frame_translation[fids])


def _subtree_slot(subtree: AncestorSubtree, bodies) -> np.ndarray:
    """Compact slots in ``subtree``'s layout of (full-tree) ``bodies``, all in the subtree."""
    return subtree.topo.body_flat[subtree.local[np.asarray(bodies, dtype=np.int64)]]


def _task_seeds(model: Model, subtree: AncestorSubtree, tasks: Sequence[ResolvedTask], dtype) -> jax.Array:
    """``(1, W', T, 6, 6)``: rows ``B_t*`` (frame motion ← body motion) at each task's body."""
    topo = subtree.topo
    xf = _frame_rows(model, tasks, dtype)
    n_t = len(tasks)
    flat = _subtree_slot(subtree, [t.body for t in tasks])
    seeds = jnp.zeros((topo.width, n_t, 6, 6), dtype)
    seeds = seeds.at[flat, np.arange(n_t)].set(xf)
    return seeds.reshape(topo.layout_shape + (n_t, 6, 6))


def task_sweeps(model: Model, q: jax.Array, tasks: Sequence[ResolvedTask], with_psi: bool = True) -> TaskSweeps:
    """Riccati gather, Υ scatter and the Ψ gather for ``tasks`` at ``q``.

    The Riccati gather covers the whole tree; the others only the task bodies' ancestors.
    ``with_psi=False`` skips the Ψ gather (``psi_rows`` is then ``None``), for tasks that share
    their body (:func:`~sodyn.algorithms.tasks.tasks_share_their_body`).
    """
    dtype = q.dtype
    levels = prepare(model, q)
    abi = riccati(model, body_frames(model, levels))
    subtree = ancestor_subtree(model.topology, tuple(sorted({t.body for t in tasks})))
    sub_levels, sub_abi = restrict_levels(subtree, levels), restrict_articulated(subtree, abi)
    upsilon, rw = compliance_kernel(subtree.topo, sub_levels, sub_abi)
    fids = np.array([t.frame for t in tasks], dtype=np.int64)
    rw_body = rw.reshape((-1, 3, 3))[_subtree_slot(subtree, [t.body for t in tasks])]
    task_rot = spatial.mm(rw_body, model_params(model, dtype).frame_rotation[fids])
    psi_rows = psi_gather(subtree, sub_levels, sub_abi, _task_seeds(model, subtree, tasks, dtype)) if with_psi else None
    return TaskSweeps(levels, abi, subtree, sub_levels, upsilon, rw, psi_rows, task_rot)


def compliance_from_sweeps(model: Model, tasks: Sequence[ResolvedTask], sw: TaskSweeps) -> jax.Array:
    """``Λ⁻¹`` ``(m, m)`` of resolved ``tasks`` from their :func:`task_sweeps`: per task pair
    ``(s, t)`` the block ``Ψ_s(c)* Υ(c) Ψ_t(c)`` at the nearest common ancestor ``c`` (eq. 10.18,
    Alg. 10.2; ``B_s* Υ(b) B_t`` when the tasks share their body, zero across trees), in the
    tasks' references, task rows selected."""
    n_t = len(tasks)
    nca = nearest_common_ancestors(model.topology.parent, [t.body for t in tasks])
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
    rot = reference_rotations(tasks, sw.task_rotation)
    blocks = spatial.mm(rot[:, None], spatial.mm(blocks, spatial.transpose(rot)[None]))
    full = jnp.transpose(blocks, (0, 2, 1, 3)).reshape((6 * n_t, 6 * n_t))
    sel = row_selection(tasks)
    full = full[sel][:, sel]
    return 0.5 * (full + full.T)


__all__ = [
    "TaskSweeps",
    "compliance_from_sweeps",
    "compliance_kernel",
    "minv_jt_from_sweeps",
    "psi_gather",
    "restrict_articulated",
    "task_sweeps",
]
