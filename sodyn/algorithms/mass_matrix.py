"""Mass matrix by composite rigid-body inertias (Jain Alg. 4.2, tree form Alg. 9.2).

The composite inertias follow the Lyapunov recursion (Jain eq. 4.20)

    R(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) R(c) φ*(k, c).

Lemma 4.1 gives ``𝓜(i, k) = H(i) φ(i, k) R(k) H*(k)`` for ``i`` an ancestor of (or equal to)
``k``.  Expressed in world axes about one point fixed in space (the first body's origin,
:func:`~sodyn.algorithms.kinematics.centred_world_poses_levels`), ``φ(i, k)`` becomes the identity, so
with ``H*_w`` and ``R_w`` the joint axes and composite inertias in world coordinates,
``𝓜(i, k) = H*_w(i)ᵀ R_w(k) H*_w(k)``: one masked outer product over dof pairs (cost
O(N + nv²)), the ancestor mask being static.  Symmetry fills in the other triangle.

In world coordinates the recursion itself loses its transforms, ``R_w(k) = M_w(k) +
Σ_c R_w(c)``, a gather of plain additions, which costs far less than the 6×6 congruences of
the body-frame form.  Each level of that gather forms its bodies' ``M_w`` from their mass, world
centre of mass and rotated rotational inertia (Jain eqs. 2.6–2.8, 2.12), and emits only the
force columns ``R_w(k) H*_w(k)`` of its dofs: the composites never leave the sweep, and the
6×6 world inertias are never streamed in.  About one point and in one set of axes, spatial
inertias add by their ten parameters (mass, first moment ``m c``, rotational inertia about the
point), so the gather carries those 13 numbers per body instead of the 6×6 matrix
(:func:`sodyn.spatial.world_inertia_parameters`, :func:`sodyn.spatial.apply_inertia`).  The
composites are sums of positive inertias, so unlike the articulated recursions in world axes
(:mod:`sodyn.algorithms.articulated`) world axes cost float32 no digits here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import check_vector, mass_parameter_levels, model_params, prepare
from sodyn.algorithms.kinematics import centred_world_poses_levels, world_subspace_blocks
from sodyn.contraction import contract
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import BLOCK_PRODUCT_MATMUL_SIZE
from sodyn.spatial import apply_inertia, world_inertia_parameters
from sodyn.sweeps import Fields, gather, in_slots
from sodyn.topology import dofs_from_levels, from_levels


def world_inertia(mass, com, rot_inertia, wr: jax.Array, wp: jax.Array) -> jax.Array:
    """A body's 6×6 spatial inertia about the world origin in world axes (Jain eqs. 2.6–2.8),
    from its parameters there (:func:`world_inertia_parameters`)."""
    return spatial.inertia_from_parameters(*world_inertia_parameters(mass, com, rot_inertia, wr, wp))


def world_composites(model: Model, wr: jax.Array, wp: jax.Array, axes: list[jax.Array] | None) -> list:
    """The composite inertias ``R_w(k) = M_w(k) + Σ_c R_w(c)`` (Jain eq. 4.20 with every ``φ``
    the identity) about the world origin in world axes, summed as inertia parameters
    (:func:`world_inertia_parameters`) by one gather.  Padding slots have zero mass and
    contribute nothing.

    With ``axes``, the per-kernel world joint axes ``H*_w`` (:func:`world_subspace_blocks`), the
    gather emits only the force columns ``R_w(k) H*_w(k)`` per kernel, ``(1, Wk, nv_k, 6)``: the
    composites never leave the sweep.  Without, it emits per kernel the composites'
    parameters ``(m, h, J_O)``.
    """
    topo = model.topology
    dtype = wp.dtype

    def force_columns(kernel, composite):  # R_w(k) H*_w(k)
        m, h, j = composite
        return None, apply_inertia(m[:, None], h[:, None], j[:, None], kernel.x.axes)

    def step(from_children, level):
        x = level.x
        own = world_inertia_parameters(*x.mass, *x.pose)
        comp = tuple(a + b for a, b in zip(own, from_children))
        return comp, (level.by_kernel(comp) if axes is None else level.each_kernel(force_columns, comp)[1])

    zero = (jnp.zeros((), dtype), jnp.zeros(3, dtype), jnp.zeros((3, 3), dtype))
    kernel_xs = Fields(axes=axes) if axes is not None else ()
    xs = Fields(mass=mass_parameter_levels(model, dtype), pose=(wr, wp))
    return list(gather(topo, step, zero, xs, kernel_xs))


def mass_matrix(model: Model, q) -> jax.Array:
    """The joint-space mass matrix ``𝓜(q)`` ``(nv, nv)``, armature included (Jain eq. 4.20)."""
    return _mass_matrix(model, check_vector(model, q, model.nq, "q"))


def _mass_matrix(model: Model, q) -> jax.Array:
    topo = model.topology
    levels = prepare(model, q)
    wr, wp = centred_world_poses_levels(levels, topo)
    axes_blocks = world_subspace_blocks(model.topology, levels, wr, wp)
    axes = dofs_from_levels(topo, axes_blocks)  # (nv, 6): H*_w per dof
    f = dofs_from_levels(topo, world_composites(model, wr, wp, axes_blocks))  # R_w(k) H*_w(k) per dof
    outer = _pairs(axes, f)  # H*_w(i)ᵀ R_w(k) H*_w(k)
    ancestor = topo.support[topo.dof_body].T  # [i, k]: dof i's body is k's body or an ancestor
    strict = ancestor & (topo.dof_body[:, None] != topo.dof_body[None, :])
    full = jnp.where(ancestor, outer, 0.0) + jnp.where(strict, outer, 0.0).T
    return full + jnp.diag(model_params(model, q.dtype).armature)


@full_precision
def _pairs(axes: jax.Array, f: jax.Array) -> jax.Array:
    """``axes fᵀ`` ``(nv, nv)``: one ``dot_general`` above
    :data:`~sodyn.runtime.tuning.BLOCK_PRODUCT_MATMUL_SIZE` multiply-adds, else one
    :func:`~sodyn.contraction.contract` (faster on small blocks on XLA:CPU)."""
    if axes.shape[0] * f.shape[0] * axes.shape[1] > BLOCK_PRODUCT_MATMUL_SIZE:
        return jnp.einsum("ij,kj->ik", axes, f)
    return contract("...ij,...kj->...ik", axes, f)


def composite_inertias(model: Model, q) -> jax.Array:
    """Composite-body spatial inertias ``R(k)`` ``(n_bodies, 6, 6)``, each about its body frame:
    the composites ``R_w(k)`` of :func:`world_composites`, carried from the world axes at the
    centred origin into body ``k``'s frame by the congruence with its inverse pose (Jain eq. 2.12)."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    wr, wp = centred_world_poses_levels(prepare(model, q), topo)
    composites = in_slots(tuple(world_composites(model, wr, wp, None)))
    r_world = spatial.inertia_from_parameters(*composites)  # about the centred origin, world axes
    ri, pi = spatial.inverse_transform(wr, wp)
    return from_levels(topo, spatial.inertia_to_parent(ri, pi, r_world))
