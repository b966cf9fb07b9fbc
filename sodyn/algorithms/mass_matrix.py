"""Mass matrix by composite rigid-body inertias (Jain Alg. 4.2, tree form Alg. 9.2).

The composite inertias follow the Lyapunov recursion (Jain eq. 4.20)

    R(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) R(c) φ*(k, c).

Lemma 4.1 gives ``𝓜(i, k) = H(i) φ(i, k) R(k) H*(k)`` for ``i`` an ancestor of (or equal to)
``k``.  Expressed in world axes at the world origin, ``φ(i, k)`` becomes the identity, so
with ``H*_w`` and ``R_w`` the joint axes and composite inertias in world coordinates,
``𝓜(i, k) = H*_w(i)ᵀ R_w(k) H*_w(k)``: one masked outer product over dof pairs (cost
O(N + nv²)), the ancestor mask being static.  Symmetry fills in the other triangle.

In world coordinates the recursion itself loses its transforms, ``R_w(k) = M_w(k) +
Σ_c R_w(c)``: :func:`mass_matrix` forms each body's ``M_w`` from its mass, world centre of
mass and rotated rotational inertia, and sums subtrees with a gather of plain additions,
which costs far less than the 6×6 congruences of the body-frame form.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import Levels, check_vector, model_params, prepare
from sodyn.algorithms.kinematics import world_poses_levels, world_subspace_columns
from sodyn.model import Model
from sodyn.topology import from_levels, gather, to_levels


def composite_levels(model: Model, levels: Levels) -> jax.Array:
    """Composite inertias ``R(k)`` about each body frame, slot layout ``(1, W, 6, 6)``."""
    dtype = levels.rel_p.dtype

    def step(from_children, x):
        r, p, inertia = x
        comp = inertia + from_children
        return spatial.inertia_to_parent(r, p, comp), comp

    return gather(model.topology, step, jnp.zeros((6, 6), dtype), (levels.rel_r, levels.rel_p, levels.inertia))


def world_inertias_levels(model: Model, wr: jax.Array, wp: jax.Array) -> jax.Array:
    """Each body's spatial inertia about the world origin in world axes, slot layout.

    Built from the body's mass ``m``, its world centre of mass ``c_w = R c + p`` and its
    rotational inertia in world axes ``J_w = R J_c Rᵀ`` (Jain eq. 2.5); padding slots are zero.
    """
    topo = model.topology
    dtype = wp.dtype
    m = model_params(model, dtype)
    mass = to_levels(topo, m.mass, jnp.zeros((), dtype))
    com = to_levels(topo, m.com, jnp.zeros(3, dtype))
    rot_inertia = to_levels(topo, m.inertia, jnp.zeros((3, 3), dtype))
    com_world = spatial.mv(wr, com) + wp
    rot_inertia_world = spatial.mm(wr, spatial.mm(rot_inertia, spatial.transpose(wr)))
    return spatial.spatial_inertia(mass, com_world, rot_inertia_world)


def world_composite_levels(model: Model, wr: jax.Array, wp: jax.Array) -> jax.Array:
    """Composite inertias ``R_w(k) = Σ_{j ∈ subtree(k)} M_w(j)`` about the world origin, world axes."""

    def step(from_children, inertia):
        comp = inertia + from_children
        return comp, comp

    zero = jnp.zeros((6, 6), wp.dtype)
    return gather(model.topology, step, zero, world_inertias_levels(model, wr, wp))


def mass_matrix(model: Model, q) -> jax.Array:
    """The joint-space mass matrix ``𝓜(q)`` ``(nv, nv)``, armature included."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    levels = prepare(model, q)
    wr, wp = world_poses_levels(levels, topo)
    comp_world = from_levels(topo, world_composite_levels(model, wr, wp))
    axes = world_subspace_columns(model, levels, wr, wp)  # (nv, 6): H*_w per dof
    f = spatial.mv(comp_world[topo.dof_body], axes)  # R_w(k) H*_w(k) per dof
    outer = jnp.sum(axes[:, None, :] * f[None, :, :], axis=-1)  # H*_w(i)ᵀ R_w(k) H*_w(k)
    ancestor = topo.support[topo.dof_body].T  # [i, k]: dof i's body is k's body or an ancestor
    strict = ancestor & (topo.dof_body[:, None] != topo.dof_body[None, :])
    full = jnp.where(ancestor, outer, 0.0) + jnp.where(strict, outer, 0.0).T
    return full + jnp.diag(model_params(model, q.dtype).armature)


def composite_inertias(model: Model, q) -> jax.Array:
    """Composite-body spatial inertias ``R(k)`` ``(n_bodies, 6, 6)``, each about its body frame."""
    q = check_vector(model, q, model.nq, "q")
    return from_levels(model.topology, composite_levels(model, prepare(model, q)))
