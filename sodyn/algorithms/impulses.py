"""Impact impulses through the operational-space compliance (Alexiou 2023; Jain §11.5).

A contact ``i`` is a task (:class:`~sodyn.FrameTask` or :class:`~sodyn.PointTask`) with a
wrench direction ``n_i`` (a 6-vector ``[moment; force]`` for a frame task, a 3-vector force
for a point task) expressed in the task's reference (local axes by default, or
``world_aligned``).  ``n_i`` points *into the obstacle*: the approach speed is
``v_imp,i = n_iᵀ J_i v`` (positive while approaching), and the body receives the impulse
``−n_i ι_i`` (Alexiou's convention, ``ι`` = impulse magnitude, eqs. 11–22).

With ``N = blockdiag(n_i)`` and ``A = Nᵀ Λ⁻¹ N`` (the normal-direction block of the
operational-space compliance, from the Ω recursions), the impulses that produce the
restitution law ``n_iᵀ J_i v⁺ = −ε_i v_imp,i`` at every contact simultaneously are

    A ι = (1 + ε) ⊙ v_imp,         Δv = −𝓜⁻¹ J* N ι,

and for a single contact ``ι = (1+ε) (nᵀ Λ⁻¹ n)⁻¹ v_imp`` (Alexiou eq. 22).  ``Λ⁻¹`` comes from
the Υ scatter and ``𝓜⁻¹ J*`` from the acceleration scatter on the same Ψ gather (see
:mod:`sodyn.algorithms.operational_space`), so everything is O(n · T) with no mass matrix.
For ``ε = 1`` kinetic energy is conserved.  The impulses are not clamped: a separating
contact (``v_imp < 0``) yields a negative (pulling) impulse; deciding which contacts are
active, and complementarity, are left to the caller.  Everything is differentiable and works
under ``jit``/``vmap``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sodyn.algorithms.common import check_vector
from sodyn.algorithms.operational_space_sweeps import compliance_from_sweeps, minv_jt_from_sweeps, task_sweeps
from sodyn.algorithms.tasks import FrameTask, PointTask, resolve_tasks, stacked_task_jacobian
from sodyn.model import Model
from sodyn.runtime.precision import full_precision


class ImpactResult(NamedTuple):
    """Result of :func:`contact_impulse` / :func:`simultaneous_impulses`.

    ``impulse`` ``(n_contacts,)`` magnitudes ``ι``; ``delta_v`` ``(nv,)`` joint-velocity jump;
    ``v_plus`` ``(nv,)`` = ``v + delta_v``; ``approach_velocity`` ``(n_contacts,)``
    ``v_imp = nᵀ J v``; ``rebound_velocity`` ``(n_contacts,)`` ``nᵀ J v⁺`` (= ``−ε v_imp``);
    ``compliance`` ``(n_contacts, n_contacts)`` ``A = Nᵀ Λ⁻¹ N``.
    """

    impulse: jax.Array
    delta_v: jax.Array
    v_plus: jax.Array
    approach_velocity: jax.Array
    rebound_velocity: jax.Array
    compliance: jax.Array


def _directions(tasks, directions, dtype) -> jax.Array:
    """Stack the directions into ``N`` ``(m, n_contacts)``, checking each one's size."""
    if len(tasks) == 1 and not isinstance(directions, (list, tuple)):
        directions = [directions]
    if len(directions) != len(tasks):
        raise ValueError(f"got {len(directions)} directions for {len(tasks)} contacts")
    m = sum(t.dim for t in tasks)
    cols, row = [], 0
    for t, n in zip(tasks, directions):
        n = jnp.asarray(n, dtype)
        if n.shape != (t.dim,):
            raise ValueError(
                f"direction of contact {t.name!r} must have shape ({t.dim},) "
                f"({'[moment; force]' if t.dim == 6 else 'a force'}), got {n.shape}"
            )
        col = jnp.zeros((m,), dtype).at[row: row + t.dim].set(n)
        cols.append(col)
        row += t.dim
    return jnp.stack(cols, axis=1)


@full_precision
def simultaneous_impulses(
    model: Model, q, v, contacts, directions, restitution=0.0, regularization=0.0
) -> ImpactResult:
    """Impulses at several contacts at once, through the multi-task ``Λ⁻¹`` (see module doc).

    ``contacts``: tasks (as accepted by :func:`sodyn.operational_space_compliance`);
    ``directions``: one wrench direction per contact; ``restitution``: a scalar or one
    ``ε_i`` per contact.  ``regularization`` ``λ`` solves ``(A + λ I) ι = (1+ε) v_imp``
    instead, for redundant contacts (``A`` singular).
    """
    tasks = resolve_tasks(model, contacts)
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    dtype = q.dtype
    big_n = _directions(tasks, directions, dtype)
    n_c = big_n.shape[1]
    eps = jnp.broadcast_to(jnp.asarray(restitution, dtype), (n_c,))
    sw = task_sweeps(model, q, tasks)
    comp = compliance_from_sweeps(model, tasks, sw)  # Λ⁻¹ (m, m)
    minv_jt = minv_jt_from_sweeps(model, tasks, sw)  # 𝓜⁻¹ J* (nv, m)
    jac = stacked_task_jacobian(model, q, tasks, sw.task_rotation)  # J (m, nv)
    a = big_n.T @ comp @ big_n
    a = 0.5 * (a + a.T) + jnp.asarray(regularization, dtype) * jnp.eye(n_c, dtype=dtype)
    v_imp = big_n.T @ (jac @ v)
    rhs = (1.0 + eps) * v_imp
    if n_c == 1:
        impulse = rhs / a[0, 0]
    else:
        impulse = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a, lower=True), rhs)
    dv = -(minv_jt @ (big_n @ impulse))
    v_plus = v + dv
    return ImpactResult(impulse, dv, v_plus, v_imp, big_n.T @ (jac @ v_plus), a)


def contact_impulse(model: Model, q, v, contact, direction, restitution=0.0) -> ImpactResult:
    """Alexiou's impact at one contact: ``ι = (1+ε)(nᵀ Λ⁻¹ n)⁻¹ v_imp``, ``Δv = −𝓜⁻¹ J* n ι``.

    ``contact`` is one task (e.g. ``sd.PointTask("tip", "world_aligned")``) and ``direction``
    its wrench direction ``n`` (pointing into the obstacle).  Returns an :class:`ImpactResult`
    with one contact.
    """
    tasks = resolve_tasks(model, contact)
    if len(tasks) != 1:
        raise ValueError("contact_impulse takes one contact; use simultaneous_impulses for several")
    return simultaneous_impulses(model, q, v, tasks_to_specs(tasks), [direction], restitution)


def tasks_to_specs(tasks) -> list:
    """Resolved tasks back to task objects (internal helper)."""
    out = []
    for t in tasks:
        cls = FrameTask if t.dim == 6 else PointTask
        out.append(cls(t.frame, t.reference))
    return out


__all__ = ["ImpactResult", "contact_impulse", "simultaneous_impulses"]
