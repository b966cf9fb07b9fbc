"""Scene helpers: :func:`with_ground_plane` puts a robot loaded without terrain (a URDF, a
built model) on a floor that its geoms collide with."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.model import Model
from sodyn.model_data import check_geom


def plane_rotation(normal: jax.Array) -> jax.Array:
    """A rotation whose third column is the unit ``normal`` (a plane geom's frame)."""
    k = jnp.argmin(jnp.abs(normal))
    a = jnp.where(jnp.arange(3) == k, 1.0, 0.0).astype(normal.dtype)
    t1 = spatial.cross(a, normal)
    t1 = t1 / jnp.sqrt(spatial.dot(t1, t1))  # |a × n|² ≥ 2/3 for a unit n
    return jnp.stack([t1, spatial.cross(normal, t1), normal], axis=-1)


def with_ground_plane(model: Model, *, normal=(0.0, 0.0, 1.0), height: float = 0.0, friction: float = 1.0,
                      name: str = "ground", contype: int = 1, conaffinity: int = 1) -> Model:
    """``model`` with one more geom: an infinite world plane ``{x : n·x = height}`` called
    ``name``, with sliding ``friction`` (torsional and rolling MuJoCo's defaults) and the
    bitmasks ``contype``/``conaffinity`` (MuJoCo's default 1 collides with every geom of a
    loaded robot, self-collision on or off).  The other geoms keep their indices.

    **Raises** ``ValueError`` for a non-unit or non-finite normal, a non-finite height, a
    negative friction or a name already used by a geom."""
    n = np.asarray(normal, np.float64)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or abs(np.linalg.norm(n) - 1.0) > 1e-6:
        raise ValueError(f"with_ground_plane: normal must be a finite unit 3-vector, got {normal!r}")
    if not np.isfinite(float(height)):
        raise ValueError(f"with_ground_plane: height must be finite, got {height!r}")
    g = model.geoms
    if name in g.names:
        raise ValueError(f"with_ground_plane: model {model.name!r} already has a geom called {name!r}")
    fr = np.array([float(friction), 0.005, 0.0001])
    static = check_geom(f"with_ground_plane: geom {name!r}", "plane", np.zeros(3), fr, contype=contype,
                        conaffinity=conaffinity)
    dtype = g.size.dtype

    def grow(x, row):
        return jnp.concatenate([x, jnp.asarray(row, dtype)[None]], axis=0)

    geoms = dataclasses.replace(
        g,
        rotation=grow(g.rotation, plane_rotation(jnp.asarray(n, dtype))),
        translation=grow(g.translation, float(height) * n),
        size=grow(g.size, np.zeros(3)), friction=grow(g.friction, fr), margin=grow(g.margin, 0.0),
        gap=grow(g.gap, 0.0), names=g.names + (name,), type=g.type + ("plane",), body=g.body + (-1,),
        contype=g.contype + (static["contype"],), conaffinity=g.conaffinity + (static["conaffinity"],),
        condim=g.condim + (3,), priority=g.priority + (0,))
    return eqx.tree_at(lambda m: m.geoms, model, geoms)


__all__ = ["plane_rotation", "with_ground_plane"]
