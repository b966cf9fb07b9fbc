"""Holding a pose: servo gains from the mass matrix, the static feed-forward of a pose, and a
robot put on the ground at its pose (what ``sodyn simulate --stand`` runs).

**Gains.**  Each one-dof joint ``j`` gets the PD gains of a critically damped (ratio ``ζ``)
oscillator of frequency ``f`` on its own inertia at the pose, ``m_j = 𝓜_jj(q*) + armature_j``:

    k_p = (2π f)² m_j,        k_v = 2 ζ sqrt(k_p m_j).

**Feed-forward.**  At rest gravity is held by the joint torques ``τ`` and the support forces
``f_c`` at the contact points (``g(q) = Sᵀ τ + J_cᵀ f_c``, ``g`` the generalised gravity force
:func:`~sodyn.gravity_forces`, ``S`` selecting the actuated dofs).  A fixed base carries
whatever the joints do not: ``τ = g_joints``.  A floating base has no actuator, so its six rows
fix the support forces; of those the feed-forward takes the least-squares ones,
``f_c = (J_c,baseᵀ)⁺ g_base``, and ``τ = g_joints − J_c,jointsᵀ f_c``.  The contact points
are those of :func:`support_points`: the model's contacts within ``depth`` of the lowest.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.algorithms.inverse_dynamics import gravity_forces
from sodyn.algorithms.kinematics import forward_kinematics
from sodyn.configuration import integrate
from sodyn.model import Model
from sodyn.model_data import Actuators
from sodyn.simulate.actuator_builders import one_dof_joints, pd_servos, servo_control, servo_indices
from sodyn.simulate.initial_states import floating_roots

#: Contacts within this distance of the lowest one support the pose (m).
SUPPORT_DEPTH = 5e-3


@jax.jit
def _pose_derivatives(model: Model, q: jax.Array):
    """The bodies' world rotations ``(n, 3, 3)`` and origins ``(n, 3)`` at ``q`` and their
    derivatives along each velocity coordinate, ``(n, 3, 3, nv)`` and ``(n, 3, nv)``."""
    def pose(xi):
        body = forward_kinematics(model, integrate(model, q, xi)).body
        return body.rotation, body.translation

    zero = jnp.zeros(model.nv, q.dtype)
    return pose(zero), jax.jacfwd(pose)(zero)


def _unit_twists(model: Model, derivatives, dofs: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """World angular velocity ``ω (k, 3)`` and velocity of the world origin ``v₀ (k, 3)`` of the
    child body of each dof in ``dofs`` when that dof alone moves at unit rate."""
    (rotation, origin), (d_rotation, d_origin) = (tuple(np.asarray(x) for x in part) for part in derivatives)
    starts = np.asarray(model.topology.v_start)
    omegas, origins = [], []
    for d in dofs:
        b = int(np.flatnonzero(starts <= d)[-1])   # one-dof joints: the body whose dof it is
        w_hat = d_rotation[b, :, :, d] @ rotation[b].T
        omega = np.array([w_hat[2, 1], w_hat[0, 2], w_hat[1, 0]])
        omegas.append(omega)
        origins.append(d_origin[b, :, d] - np.cross(omega, origin[b]))
    return np.array(omegas).reshape(-1, 3), np.array(origins).reshape(-1, 3)


def _moving_inertia(model: Model, pose, omega: np.ndarray, origin: np.ndarray, bodies: np.ndarray) -> float:
    """``Σ_b m_b |v₀ + ω × c_b|² + ωᵀ R_b I_b R_bᵀ ω`` over ``bodies`` (boolean ``(n,)``): the
    inertia those bodies present to the unit twist ``(ω, v₀)``."""
    rotation, translation = (np.asarray(x, np.float64) for x in pose)
    mass, com, inertia = (np.asarray(x, np.float64) for x in (model.mass, model.com, model.inertia))
    c = translation + np.einsum("bij,bj->bi", rotation, com)
    speed = origin + np.cross(omega, c)
    w_body = np.einsum("bji,j->bi", rotation, omega)
    energy = mass * np.sum(speed * speed, -1) + np.einsum("bi,bij,bj->b", w_body, inertia, w_body)
    return float(np.sum(energy[bodies]))


def servo_gains(model: Model, q, *, frequency: float = 10.0, damping_ratio: float = 1.0,
                joints: Sequence[str] | None = None, support: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """``(k_p, k_v)`` of each one-dof joint in ``joints`` (default: all) at pose ``q`` (module
    docstring).  A joint with a ``support`` body (one resting on the ground) below it moves the
    rest of the robot about the support: its inertia ``m_j`` is that of the bodies outside its
    subtree about its axis; any other joint's is its subtree's, ``𝓜_jj``."""
    if not frequency > 0 or not damping_ratio >= 0:
        raise ValueError(f"frequency must be positive and damping_ratio non-negative, got {frequency!r}, "
                         f"{damping_ratio!r}")
    bodies = one_dof_joints(model, joints)
    dofs = [int(model.topology.v_start[k]) for k in bodies]
    derivatives = _pose_derivatives(model, jnp.asarray(q, model.mass.dtype))
    omega, origin = _unit_twists(model, derivatives, dofs)
    m = []
    for i, k in enumerate(bodies):
        below = model.topology.support[:, int(model.topology.v_start[k])]    # the bodies joint k moves
        carried = ~below if np.any(below[list(support)]) else below
        m.append(_moving_inertia(model, derivatives[0], omega[i], origin[i], carried))
    m = np.asarray(m) + np.asarray(model.armature)[dofs]
    kp = (2.0 * np.pi * frequency) ** 2 * m
    return kp, 2.0 * damping_ratio * np.sqrt(kp * m)


def _ground_contacts(model: Model, q) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Distance ``(m,)``, world position ``(m, 3)`` and body ``(m,)`` of the model's contact
    slots at ``q`` between a body geom and a world geom (``None`` when there are none)."""
    from sodyn.collision.collide import collide

    geom_body = np.asarray(model.geoms.body)
    contacts = jax.jit(collide)(model, jnp.asarray(q, model.mass.dtype))
    g1, g2 = np.asarray(contacts.geom1, dtype=int), np.asarray(contacts.geom2, dtype=int)
    on_world = (geom_body[g1] < 0) != (geom_body[g2] < 0) if len(g1) else np.zeros(0, bool)
    if not on_world.any():
        return None
    body = np.maximum(geom_body[g1], geom_body[g2])[on_world]      # the side that is not the world
    return np.asarray(contacts.distance)[on_world], np.asarray(contacts.position)[on_world], body


def support_points(model: Model, q, depth: float = SUPPORT_DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """The bodies and world positions ``(n,)``, ``(n, 3)`` of the model's contacts at ``q``
    between a body geom and a world geom, within ``depth`` of the lowest (none for a model
    without world geoms)."""
    found = _ground_contacts(model, q)
    if found is None:
        return np.zeros(0, int), np.zeros((0, 3))
    distance, position, body = found
    take = distance <= distance.min() + depth
    return body[take], position[take]


def _point_jacobians(model: Model, q: jax.Array, bodies: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``∂x/∂v`` ``(n, 3, nv)`` of the body-fixed points that are at world ``points`` at ``q``."""
    (rotation, origin), (d_rotation, d_origin) = (tuple(np.asarray(x, np.float64) for x in part)
                                                  for part in _pose_derivatives(model, q))
    local = np.einsum("nji,nj->ni", rotation[bodies], points - origin[bodies])
    return np.einsum("nijv,nj->niv", d_rotation[bodies], local) + d_origin[bodies]


def static_equilibrium(model: Model, q, support: tuple[np.ndarray, np.ndarray] | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The joint torques ``τ (nv,)`` (zero on a floating base's dofs) and the support forces
    ``f_c (n, 3)`` (world; none for a fixed base) that hold pose ``q`` at rest, ``g(q) = Sᵀ τ +
    J_cᵀ f_c`` (module docstring).  ``support``: ``(bodies, world points)`` (default
    :func:`support_points`), used only by a floating base."""
    q = jnp.asarray(q, model.mass.dtype)
    g = np.asarray(jax.jit(gravity_forces)(model, q), dtype=np.float64)
    free = floating_roots(model)
    if not free:
        return g, np.zeros((0, 3))
    base = np.zeros(model.nv, bool)
    for k in free:
        base[model.joint_v_slice(k)] = True
    bodies, points = support_points(model, q) if support is None else support
    if not len(bodies):
        raise ValueError("static_feedforward: a floating base needs support points (the model has no contact "
                         "with a world geom at the pose; add one with sodyn.with_ground_plane)")
    jac = _point_jacobians(model, q, np.asarray(bodies, int), np.asarray(points, np.float64)).reshape(-1, model.nv)
    forces = np.linalg.lstsq(jac[:, base].T, g[base], rcond=None)[0]
    tau = g - jac.T @ forces
    tau[base] = 0.0
    return tau, forces.reshape(-1, 3)


def static_feedforward(model: Model, q, support: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The joint torques of :func:`static_equilibrium`."""
    return static_equilibrium(model, q, support)[0]


def on_the_ground(model: Model, q, depth: float = 5e-4) -> np.ndarray:
    """``q`` with each root free joint moved vertically so that the lowest contact with a world
    geom is ``depth`` deep (the pose unchanged otherwise); ``q`` for a fixed base."""
    q = np.array(q, dtype=np.float64)
    free = floating_roots(model)
    if not free:
        return q
    found = _ground_contacts(model, q)
    if found is None:
        raise ValueError("on_the_ground: the model has no contact with a world geom (add a ground plane with "
                         "sodyn.with_ground_plane)")
    lift = -depth - float(found[0].min())
    for k in free:
        q[int(model.topology.q_start[k]) + 2] += lift
    return q


def hold_pose(model: Model, q, *, frequency: float = 10.0, damping_ratio: float = 1.0,
              feedforward: bool = True) -> tuple[Actuators, jax.Array]:
    """:func:`~sodyn.simulate.pd_servos` on every one-dof joint with :func:`servo_gains`, and
    the constant control holding pose ``q`` with the :func:`static_feedforward` (zero without
    ``feedforward``)."""
    support = support_points(model, q) if floating_roots(model) else (np.zeros(0, int), np.zeros((0, 3)))
    kp, kv = servo_gains(model, q, frequency=frequency, damping_ratio=damping_ratio, support=tuple(support[0]))
    servos = pd_servos(model, kp=kp, kv=kv)
    iq, iv = servo_indices(model, servos)
    tau = static_feedforward(model, q, support) if feedforward else np.zeros(model.nv)
    dtype = model.mass.dtype
    return servos, servo_control(jnp.asarray(np.asarray(q)[iq], dtype), feedforward=jnp.asarray(tau[iv], dtype))


__all__ = ["SUPPORT_DEPTH", "hold_pose", "on_the_ground", "servo_gains", "static_equilibrium", "static_feedforward",
           "support_points"]
