"""Centroidal momentum: the system's spatial momentum about its centre of mass (Orin & Goswami),
the centroidal momentum matrix ``A_G(q)`` and the centroidal composite inertia ``I_G(q)``.

The system spatial momentum about a point ``o`` is ``h_o = Σ_k φ(o, k) M(k) V(k)`` (Jain Sol.
4.1, ``h_S = E φ M V``); with ``V = φ* H* θ̇`` it is ``h_o = Σ_k φ(o, k) R(k) H*(k) θ̇(k)``, the
composite inertias ``R(k)`` of the Lyapunov gather (eq. 4.20) applied to the joint axes.  In
world axes about one point fixed in space every ``φ`` is the identity, so the columns
``R_w(k) H*_w(k)`` of :func:`sodyn.algorithms.mass_matrix.world_composites` (one gather, the
first half of the mass matrix) are already ``A_o``; the shift to the centre of mass ``G``,

    h_G = φ(G, o) h_o = [n_o − (r_G − r_o) × f;  f],        A_G = φ(G, o) A_o,

gives the centroidal momentum ``h_G = [k_G; l]`` (angular momentum about ``G``, linear
momentum) in world-aligned axes at ``G``: Pinocchio's ``hg`` / ``Ag`` (``ccrba``,
``computeCentroidalMomentum``) with sodyn's angular-first order.  ``I_G``, the inertia of the
system locked rigid, about ``G`` in world axes, is Pinocchio's ``Ig``; ``A_G = I_G J_G`` for the
average velocity Jacobian ``J_G``.  All O(N).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sodyn import spatial
from sodyn.algorithms.common import check_vector, mass_parameter_levels, prepare
from sodyn.algorithms.kinematics import centred_world_poses_levels, world_kinematics_levels, world_subspace_blocks
from sodyn.algorithms.mass_matrix import world_composites
from sodyn.model import Model
from sodyn.topology import dofs_from_levels, dofs_to_levels


def _shift_to_centre(first_moment: jax.Array, mass: jax.Array, h_o: jax.Array) -> jax.Array:
    """``φ(G, o) h_o`` for the centre of mass ``r_G − r_o = h / m`` (``h_o`` ``(..., 6)``)."""
    c = first_moment / mass
    n, f = spatial.halves(h_o)
    return jnp.concatenate([n - spatial.cross(jnp.broadcast_to(c, f.shape), f), f], axis=-1)


def _system_parameters(model: Model, wr: jax.Array, wp: jax.Array):
    """Per slot ``(m, h, J_o)`` about the centred origin in world axes, and their sums."""
    params = spatial.world_inertia_parameters(*mass_parameter_levels(model, wp.dtype), wr, wp)
    return params, tuple(jnp.sum(x, axis=(0, 1)) for x in params)


def centroidal_momentum_matrix(model: Model, q) -> jax.Array:
    """The centroidal momentum matrix ``A_G(q)`` ``(6, nv)``, ``h_G = A_G v`` (module docstring):
    rows angular first, about the centre of mass, world axes; one composite-inertia gather."""
    q = check_vector(model, q, model.nq, "q")
    topo = model.topology
    levels = prepare(model, q)
    wr, wp = centred_world_poses_levels(levels, topo)
    axes = world_subspace_blocks(topo, levels, wr, wp)
    a_o = dofs_from_levels(topo, world_composites(model, wr, wp, axes))  # (nv, 6): R_w(k) H*_w(k) per dof
    _, (mass, first_moment, _) = _system_parameters(model, wr, wp)
    return _shift_to_centre(first_moment, mass, a_o).T


def centroidal_momentum(model: Model, q, v) -> jax.Array:
    """The centroidal momentum ``h_G = [k_G; l]`` ``(6,)``: ``Σ_k φ(G, k) M(k) V(k)`` in world
    axes at the centre of mass (Jain Sol. 4.1 about ``G``), from the world velocities of one
    scatter; equals ``centroidal_momentum_matrix(model, q) @ v``."""
    q = check_vector(model, q, model.nq, "q")
    v = check_vector(model, v, model.nv, "v", q.dtype)
    topo = model.topology
    kin = world_kinematics_levels(prepare(model, q), topo, dofs_to_levels(topo, v, 0.0))
    params, (mass, first_moment, _) = _system_parameters(model, kin.rotation, kin.translation)
    h_o = jnp.sum(spatial.apply_inertia(*params, kin.velocity), axis=(0, 1))
    return _shift_to_centre(first_moment, mass, h_o)


def centroidal_inertia(model: Model, q) -> jax.Array:
    """The centroidal composite rigid-body inertia ``I_G`` ``(6, 6)``: the system locked rigid,
    about its centre of mass in world axes, ``[[J_G, 0], [0, m I]]`` with ``J_G = J_o + m c̃ c̃``
    (parallel axes, Jain Sol. 2.2), ``c = r_G − r_o``."""
    q = check_vector(model, q, model.nq, "q")
    wr, wp = centred_world_poses_levels(prepare(model, q), model.topology)
    _, (mass, first_moment, j_o) = _system_parameters(model, wr, wp)
    c = first_moment / mass
    return spatial.spatial_inertia(mass, jnp.zeros_like(c), j_o + mass * spatial.mm(spatial.skew(c), spatial.skew(c)))


__all__ = ["centroidal_inertia", "centroidal_momentum", "centroidal_momentum_matrix"]
