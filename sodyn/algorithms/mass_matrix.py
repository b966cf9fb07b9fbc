"""Mass matrix by composite rigid-body inertias (Jain Alg. 4.2, tree form Alg. 9.2).

One gather computes the composite inertias (the Lyapunov recursion, Jain eq. 4.20)

    R(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) R(c) φ*(k, c).

Lemma 4.1 gives ``𝓜(i, k) = H(i) φ(i, k) R(k) H*(k)`` for ``i`` an ancestor of (or equal to)
``k``.  Expressed in world axes at the world origin, ``φ(i, k)`` becomes the identity, so
with ``H*_w`` and ``R_w`` the joint axes and composite inertias in world coordinates,
``𝓜(i, k) = H*_w(i)ᵀ R_w(k) H*_w(k)``: one masked outer product over dof pairs (cost
O(N + nv²)), the ancestor mask being static.  Symmetry fills in the other triangle.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import Levels, check_vector, model_params, prepare
from sodyn.algorithms.kinematics import world_poses_levels, world_subspace_columns
from sodyn.model import Model
from sodyn.topology import from_levels, gather


def composite_levels(model: Model, levels: Levels) -> jax.Array:
    """Composite inertias ``R(k)`` about each body frame, level layout ``(L, W, 6, 6)``."""
    dtype = levels.rel_p.dtype

    def step(from_children, x):
        r, p, inertia = x
        comp = inertia + from_children
        return spatial.inertia_to_parent(r, p, comp), comp

    return gather(model.topology, step, jnp.zeros((6, 6), dtype), (levels.rel_r, levels.rel_p, levels.inertia))


def mass_matrix(model: Model, q) -> jax.Array:
    """The joint-space mass matrix ``𝓜(q)`` ``(nv, nv)``, armature included."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    levels = prepare(model, q)
    wr, wp = world_poses_levels(levels, topo)
    comp_world = from_levels(topo, spatial.inertia_to_parent(wr, wp, composite_levels(model, levels)))
    axes = world_subspace_columns(model, levels, wr, wp)  # (nv, 6): H*_w per dof
    f = spatial.mv(comp_world[topo.dof_body], axes)  # R_w(k) H*_w(k) per dof
    outer = axes[:, None, 0] * f[None, :, 0]
    for c in range(1, 6):
        outer = outer + axes[:, None, c] * f[None, :, c]
    ancestor = topo.support[topo.dof_body].T  # [i, k]: dof i's body is k's body or an ancestor
    strict = ancestor & (topo.dof_body[:, None] != topo.dof_body[None, :])
    full = jnp.where(ancestor, outer, 0.0) + jnp.where(strict, outer, 0.0).T
    return full + jnp.diag(model_params(model, q.dtype).armature)


def composite_inertias(model: Model, q) -> jax.Array:
    """Composite-body spatial inertias ``R(k)`` ``(n_bodies, 6, 6)``, each about its body frame."""
    q = check_vector(model, q, model.nq, "q")
    return from_levels(model.topology, composite_levels(model, prepare(model, q)))
