"""Scene helpers: :func:`with_ground_plane` puts a robot loaded without terrain (a URDF, a
built model) on a floor that its geoms collide with, :func:`with_height_field` on a terrain
(:mod:`sodyn.terrain` makes them), and :func:`set_elevation` changes a terrain's heights (a leaf
of the model: per Monte Carlo sample under ``jax.vmap``, or differentiated)."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from sodyn import spatial
from sodyn.model import Model
from sodyn.model_data import HeightFields, check_geom, check_height_field


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


def _concrete(x) -> np.ndarray | None:
    """``x`` as a NumPy array, or ``None`` under a JAX transformation (a tracer)."""
    try:
        return np.asarray(x, np.float64)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def _check_elevation(where: str, elevation, size) -> tuple[float, float, float, float]:
    """Validate a height field's ``elevation`` and ``size`` (values only when concrete)."""
    e = _concrete(elevation)
    if e is None:  # traced: shape and size only
        if jnp.ndim(elevation) != 2 or min(jnp.shape(elevation)) < 2:
            raise ValueError(f"{where}: elevation must be an (nrow, ncol) grid with nrow, ncol >= 2, got shape "
                             f"{jnp.shape(elevation)}")
        return check_height_field(where, np.zeros((2, 2)), size)[1]
    return check_height_field(where, e, size)[1]


def with_height_field(model: Model, elevation, size, *, pos=(0.0, 0.0, 0.0), rotation=None, friction: float = 1.0,
                      name: str = "terrain", contype: int = 1, conaffinity: int = 1) -> Model:
    """``model`` with one more geom: a world height field called ``name``
    (:class:`~sodyn.model_data.HeightFields`): ``elevation (nrow, ncol)`` samples normalised to
    ``[0, 1]`` (row along ``y``, column along ``x``), ``size = (x, y, z_top, z_base)`` (the grid
    spans ``[−x, x] × [−y, y]``, heights are ``z_top · elevation``, the solid reaches down to
    ``−z_base``), placed at ``pos`` with ``rotation`` (3×3 or a wxyz quaternion; default the
    world's axes); sliding ``friction`` (torsional and rolling MuJoCo's defaults) and the bitmasks
    ``contype``/``conaffinity``.  The other geoms keep their indices.  :mod:`sodyn.terrain` makes
    ``(elevation, size)`` from parameters.  ``elevation`` may be traced (built per sample under
    ``jax.vmap``); its values are then not checked.

    **Raises** ``ValueError`` naming the geom for an elevation that is not a 2-D grid of at least
    2×2 finite values in ``[0, 1]``, a size that is not four finite positive numbers, a bad pose
    or friction, or a name already used."""
    from sodyn.rotations import as_rotation

    where = f"with_height_field: geom {name!r}"
    g = model.geoms
    if name in g.names:
        raise ValueError(f"with_height_field: model {model.name!r} already has a geom called {name!r}")
    size4 = _check_elevation(where, elevation, size)
    p = np.asarray(pos, np.float64)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ValueError(f"{where}: pos must be a finite 3-vector, got {pos!r}")
    r = as_rotation(rotation, where)
    fr = np.array([float(friction), 0.005, 0.0001])
    gsize = np.array([size4[0], size4[1], max(size4[2], size4[3])])
    static = check_geom(where, "hfield", gsize, fr, contype=contype, conaffinity=conaffinity)
    dtype = g.size.dtype
    hf = g.hfield
    e = jnp.asarray(elevation, dtype)
    rows, cols = max(hf.elevation.shape[1], e.shape[0]), max(hf.elevation.shape[2], e.shape[1])
    old = jnp.pad(hf.elevation, ((0, 0), (0, rows - hf.elevation.shape[1]), (0, cols - hf.elevation.shape[2])))
    new = jnp.pad(e, ((0, rows - e.shape[0]), (0, cols - e.shape[1])))[None]
    fields = HeightFields(jnp.concatenate([old.astype(dtype), new]), names=hf.names + (name,),
                          nrow=hf.nrow + (int(e.shape[0]),), ncol=hf.ncol + (int(e.shape[1]),), size=hf.size + (size4,))

    def grow(x, row):
        return jnp.concatenate([x, jnp.asarray(row, dtype)[None]], axis=0)

    geoms = dataclasses.replace(
        g, rotation=grow(g.rotation, r), translation=grow(g.translation, p), size=grow(g.size, gsize),
        friction=grow(g.friction, fr), margin=grow(g.margin, 0.0), gap=grow(g.gap, 0.0), names=g.names + (name,),
        type=g.type + ("hfield",), body=g.body + (-1,), contype=g.contype + (static["contype"],),
        conaffinity=g.conaffinity + (static["conaffinity"],), condim=g.condim + (3,), priority=g.priority + (0,),
        hfield=fields, hfield_id=g.hfield_id + (len(hf),))
    return eqx.tree_at(lambda m: m.geoms, model, geoms)


def set_elevation(model: Model, elevation, geom: str | int = "terrain") -> Model:
    """``model`` with the normalised ``elevation (nrow, ncol)`` of height field geom ``geom``
    (name or index) replaced: same grid and size, the new values a leaf (traced values pass:
    one terrain per Monte Carlo sample under ``jax.vmap``, or a gradient with respect to them).
    Concrete values are checked like :func:`with_height_field`'s; geoms sharing the height field
    see the new values too."""
    g = model.geoms
    i = g.index(geom)
    k = g.hfield_id[i]
    if k < 0:
        raise ValueError(f"set_elevation: geom {g.names[i]!r} is a {g.type[i]}, not a height field")
    shape = (g.hfield.nrow[k], g.hfield.ncol[k])
    if jnp.shape(elevation) != shape:
        raise ValueError(f"set_elevation: geom {g.names[i]!r} has a {shape[0]} × {shape[1]} grid, got elevation of "
                         f"shape {jnp.shape(elevation)}")
    _check_elevation(f"set_elevation: geom {g.names[i]!r}", elevation, g.hfield.size[k])
    e = jnp.asarray(elevation, g.hfield.elevation.dtype)
    return eqx.tree_at(lambda m: m.geoms.hfield.elevation, model,
                       g.hfield.elevation.at[k, : shape[0], : shape[1]].set(e))


__all__ = ["plane_rotation", "set_elevation", "with_ground_plane", "with_height_field"]
