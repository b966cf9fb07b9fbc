"""Mass matrix by composite rigid-body inertias (Jain Alg. 4.2, tree form Alg. 9.2).

One gather computes, for every body ``k``, the composite inertia (the Lyapunov recursion,
Jain eq. 4.20)

    R(k) = M(k) + Σ_{c ∈ children(k)} φ(k, c) R(c) φ*(k, c)

together with the block row ``F(k) = Σ_{d ⪰ k} φ(k, d) R(d) H*(d) E_d`` (``E_d`` places
columns at the dofs of ``d``), so that ``𝓜(k, d) = H(k) φ(k, d) R(d) H*(d)`` (Lemma 4.1)
for every descendant ``d``; symmetry fills in the rest.  Cost O(N · nv).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import check_vector, model_params, prepare, static_onehot_dofs
from sodyn.model import Model
from sodyn.topology import dofs_from_levels, from_levels, gather


def composite_inertias_and_rows(model: Model, levels) -> tuple[jax.Array, jax.Array]:
    """Composite inertias ``R`` ``(L, W, 6, 6)`` and mass-matrix rows ``(nv, nv)`` (upper part)."""
    topo = model.topology
    dtype = levels.rel_p.dtype
    nv = topo.nv
    placers = [jnp.asarray(e, dtype) for e in static_onehot_dofs(topo)]

    def step(from_children, x):
        (rc, fc), (r, p, inertia, hs, places) = from_children, x
        comp = inertia + rc
        # R(k) H*(k) E_k: each kernel's columns placed at its dofs.
        own = []
        for s, h, e in zip(levels.subspaces, hs, places):
            rh = s.at_level(h).right_times(comp[s.start:s.stop])  # (Wk, 6, nv_k)
            own.append(spatial.mm(rh, e))  # (Wk, 6, nv)
        f = fc + jnp.concatenate(own, axis=0)
        sent = (spatial.inertia_to_parent(r, p, comp), _force_cols_to_parent(r, p, f))
        return sent, (comp, f)

    hs = tuple(s.h if s.h is not None else jnp.zeros((topo.n_levels,), dtype) for s in levels.subspaces)
    zero = (jnp.zeros((6, 6), dtype), jnp.zeros((6, nv), dtype))
    comp, f = gather(topo, step, zero, (levels.rel_r, levels.rel_p, levels.inertia, hs, tuple(placers)))
    rows = [s.transpose_times_cols(f[:, s.start:s.stop]) for s in levels.subspaces]  # (L, Wk, nv_k, nv)
    return comp, dofs_from_levels(topo, rows)


def _force_cols_to_parent(r, p, f):
    """Apply ``φ`` to each column of ``f`` (..., 6, m)."""
    return jnp.swapaxes(spatial.force_to_parent(r[..., None, :, :], p[..., None, :], jnp.swapaxes(f, -1, -2)), -1, -2)


def mass_matrix(model: Model, q) -> jax.Array:
    """The joint-space mass matrix ``𝓜(q)`` ``(nv, nv)``, armature included."""
    q = check_vector(model, q, model.nq, "q")
    levels = prepare(model, q)
    _, upper = composite_inertias_and_rows(model, levels)
    topo = model.topology
    same = topo.dof_body[:, None] == topo.dof_body[None, :]
    full = upper + upper.T - upper * jnp.asarray(same, q.dtype)
    m = model_params(model, q.dtype)
    return full + jnp.diag(m.armature)


def composite_inertias(model: Model, q) -> jax.Array:
    """Composite-body spatial inertias ``R(k)`` ``(n_bodies, 6, 6)``, each about its body frame."""
    q = check_vector(model, q, model.nq, "q")
    levels = prepare(model, q)
    comp, _ = composite_inertias_and_rows(model, levels)
    return from_levels(model.topology, comp)


