"""Initial states near a model's home configuration, for Monte Carlo simulation.

:func:`home_state` perturbs the neutral (or a keyframe's, or a given) configuration on the
manifold (hinges clipped to their limits, quaternions kept unit) and lifts floating bases above
the ground plane ``z = 0``; :func:`home_sampler` makes the ``(key, model) -> State`` sampler that
:func:`~sodyn.simulate.monte_carlo` takes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sodyn.algorithms.common import check_vector
from sodyn.algorithms.kinematics import forward_kinematics
from sodyn.configuration import integrate
from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.runtime.precision import full_precision
from sodyn.simulate.ground import GroundContact
from sodyn.simulate.state import State


def floating_roots(model: Model) -> list[int]:
    """The bodies on a free joint to the world (floating bases), in body order."""
    return [k for k in range(model.n_bodies)
            if model.topology.parent[k] < 0 and model.joint_types[k] == "free"]


def _root_of(model: Model) -> np.ndarray:
    parent = np.asarray(model.topology.parent)
    root = np.arange(model.n_bodies)
    for k in range(model.n_bodies):  # bodies are in depth-first order: parents come first
        if parent[k] >= 0:
            root[k] = root[parent[k]]
    return root


def _contact_points(points) -> tuple[np.ndarray, jax.Array, jax.Array]:
    """``(body indices, body-frame positions, radii)`` of ``points`` (radii zero for a tuple)."""
    radius = None
    if isinstance(points, GroundContact):
        body, pos, radius = points.body, points.position, points.radius
    elif isinstance(points, tuple) and len(points) == 2:
        body, pos = points
    else:
        raise TypeError("points must be (body indices (nc,), body-frame positions (nc, 3)) or a GroundContact, "
                        f"got {type(points).__name__}")
    body = np.asarray(body, dtype=np.int64).reshape(-1)
    pos = jnp.asarray(pos)
    if pos.shape != (body.shape[0], 3):
        raise ValueError(f"points: positions must have shape ({body.shape[0]}, 3), got {pos.shape}")
    radius = jnp.zeros(body.shape[0], pos.dtype) if radius is None else jnp.broadcast_to(radius, body.shape)
    return body, pos, radius


@full_precision
def home_state(
    model: Model,
    key: jax.Array,
    *,
    noise: float = 0.05,
    keyframe: str | None = None,
    q=None,
    orientation_noise: float = 0.02,
    velocity_noise: float = 0.0,
    base_height: float | None = None,
    clearance: float = 0.02,
    points=None,
    t: float = 0.0,
):
    """A random state near the model's home configuration (a ``State(q, v, t)``).

    ``q`` starts at ``model.q_neutral``, at the keyframe called ``keyframe``, or at the given
    configuration ``q (nq,)`` (e.g. a robot's standing posture; a floating base's height in it
    is replaced as below), and moves on the manifold by ``sodyn.integrate`` with a random
    velocity-space step: ``noise · N(0, 1)`` on every hinge (radians or metres) and on each
    spherical joint's rotation (and a planar joint's angle), ``orientation_noise · N(0, 1)`` on
    each floating base's orientation (quaternions stay unit).  Hinges are then clipped to their
    finite limits.

    Floating bases (root free joints) are put above the ground plane ``z = 0``: at height
    ``base_height`` if given, else lifted (or lowered) together, by one offset, so that the
    lowest point of their subtrees is ``clearance`` above the plane (several free bodies keep
    their arrangement: a stack of objects stays a stack).  The points are the body origins and every frame origin
    (merged fixed links such as feet included), plus ``points``: contact points as
    ``(body indices (nc,), body-frame positions (nc, 3))`` or a
    :class:`~sodyn.simulate.GroundContact` (the bottoms of its spheres, ``radius`` below their
    centres, so its feet start ``clearance`` above the plane).  Fixed-base models are left
    where they are.

    ``v = velocity_noise · N(0, 1)`` (zero by default); ``t`` is the start time.
    """
    for name, val in (("noise", noise), ("orientation_noise", orientation_noise),
                      ("velocity_noise", velocity_noise), ("clearance", clearance)):
        if np.ndim(val) != 0 or not np.isfinite(float(val)) or float(val) < 0:
            raise ValueError(f"home_state: {name} must be a finite non-negative number, got {val!r}")
    dtype = model.mass.dtype
    if q is not None and keyframe is not None:
        raise ValueError("home_state: give a start configuration q or a keyframe, not both")
    if q is not None:
        q0 = check_vector(model, q, model.nq, "home_state: q", dtype)
    elif keyframe is None:
        q0 = jnp.asarray(model.q_neutral, dtype)
    else:
        q0 = jnp.asarray(model.keyframes[keyframe][0], dtype)
    topo = model.topology
    scale = np.zeros(model.nv)
    hinge_q = np.zeros(model.nq, dtype=bool)
    for k, jt in enumerate(model.joint_types):
        kernel, vs, qs = KERNEL_OF[jt], int(topo.v_start[k]), int(topo.q_start[k])
        if kernel == "hinge":
            scale[vs], hinge_q[qs] = noise, True
        elif kernel == "spherical":
            scale[vs:vs + 3] = noise
        elif kernel == "planar":
            scale[vs + 2] = noise
        elif kernel == "free":
            scale[vs:vs + 3] = orientation_noise
    k_q, k_v = jax.random.split(key)
    dv = jnp.asarray(scale, dtype) * jax.random.normal(k_q, (model.nv,), dtype)
    q = integrate(model, q0, dv)
    q = jnp.where(hinge_q, jnp.clip(q, model.lower_limit.astype(dtype), model.upper_limit.astype(dtype)), q)

    roots = floating_roots(model)
    if roots:
        z_index = np.array([int(topo.q_start[r]) + 2 for r in roots])
        if base_height is not None:
            q = q.at[z_index].set(jnp.asarray(base_height, dtype))
        else:
            fk = forward_kinematics(model, q)
            root = _root_of(model)
            zs, owners = [fk.body.translation[:, 2]], [root]
            fb = np.asarray(model.frame_body)
            on_body = fb >= 0
            zs.append(fk.frame.translation[on_body, 2])
            owners.append(root[fb[on_body]])
            if points is not None:
                body, pos, radius = _contact_points(points)
                world = fk.body.translation[body] + jnp.einsum("nij,nj->ni", fk.body.rotation[body], pos.astype(dtype))
                zs.append(world[:, 2] - radius.astype(dtype))
                owners.append(root[body])
            z, owner = jnp.concatenate(zs), np.concatenate(owners)
            lowest = jnp.min(jnp.where(np.isin(owner, roots), z, jnp.inf))
            q = q.at[z_index].add(clearance - lowest)
    v = velocity_noise * jax.random.normal(k_v, (model.nv,), dtype)
    return State(q=q, v=v, t=jnp.asarray(t, dtype))


def home_sampler(**options) -> Callable[[jax.Array, Model], Any]:
    """The ``sample_state(key, model)`` of :func:`monte_carlo` that calls :func:`home_state` with ``options``."""
    allowed = set(inspect.signature(home_state).parameters) - {"model", "key"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"home_sampler: unknown option(s) {unknown}; options are {sorted(allowed)}")
    return lambda key, model: home_state(model, key, **options)


__all__ = ["floating_roots", "home_sampler", "home_state"]
