"""Parameter distributions: random versions of any equinox pytree, for Monte Carlo simulation.

:class:`ParameterDistribution` (and :func:`randomize`) draws a random version of a pytree (a
:class:`~sodyn.Model`, a contact model, a policy's parameters, or a dict of them) from a mapping
``path -> sampler``.  A path names a field by attributes, dict keys and indices joined with dots
(``"mass"``, ``"actuators.gain"``, ``"model.damping"``, ``"contact.stiffness"``); a sampler is
``sampler(key, nominal) -> value`` with ``value`` of the nominal's shape.  A tuple of paths gets a
tuple of nominals and returns a tuple: ``("mass", "inertia"): uniform_scale(0.8, 1.2)`` scales
each body's mass and rotational inertia by one factor, which keeps the inertia physical
(positive definite, triangle inequality) and the centre of mass where it is.  Samplers:
:func:`uniform_scale`, :func:`log_uniform_scale`, :func:`normal_noise`, :func:`uniform`.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

Sampler = Callable[[jax.Array, Any], Any]


# ---------------------------------------------------------------------------
# paths into pytrees
# ---------------------------------------------------------------------------


def _split_path(path: str) -> tuple[str, ...]:
    if not isinstance(path, str) or not path or any(not p for p in path.split(".")):
        raise ValueError(f"a parameter path must be a non-empty dotted name such as 'mass' or 'contact.stiffness', "
                         f"got {path!r}")
    return tuple(path.split("."))


def _get(tree: Any, parts: Sequence[str], path: str) -> Any:
    node = tree
    for i, part in enumerate(parts):
        where = ".".join(parts[:i]) or "the pytree"
        if isinstance(node, Mapping):
            if part not in node:
                raise ValueError(f"parameter {path!r}: {where} has no key {part!r}; keys are {sorted(map(str, node))}")
            node = node[part]
        elif isinstance(node, (list, tuple)) and not hasattr(node, "_fields") and part.lstrip("-").isdigit():
            node = node[int(part)]
        elif hasattr(node, part) and not callable(getattr(node, part)):
            node = getattr(node, part)
        else:
            fields = ([f.name for f in dataclasses.fields(node)] if dataclasses.is_dataclass(node)
                      else list(getattr(node, "_fields", ())))
            raise ValueError(f"parameter {path!r}: {where} ({type(node).__name__}) has no field {part!r}"
                             + (f"; fields are {fields}" if fields else ""))
    return node


def path_name(key_path) -> str:
    """``model.mass`` for the key path of a leaf (dict keys, attributes and indices joined by dots)."""
    parts = []
    for k in key_path:
        for attr in ("key", "name", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return ".".join(parts)


def _seed(name: str) -> int:
    """A stable integer per parameter path (independent of the order of the entries and of Python's hashing)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


# ---------------------------------------------------------------------------
# parameter distributions
# ---------------------------------------------------------------------------


class ParameterDistribution:
    """A distribution over versions of a pytree: ``dist(key, nominal) -> sample``.

    ``spec`` maps a path (``"mass"``, ``"model.damping"``, ``"contact.friction"``), or a tuple
    of paths sampled together, to a sampler ``sampler(key, nominal) -> value`` (a tuple of
    nominals and of values for a tuple of paths).  Paths not in ``spec`` keep their nominal
    value.  Each entry draws with its own key, ``fold_in(key, crc32(path))``, so adding an
    entry does not change the others' draws.  A value must have the nominal's shape
    (``ValueError`` naming the parameter and both shapes otherwise); it is cast to the
    nominal's dtype.  Works under ``jit`` and ``vmap`` (over keys).

    Example, a model and a ground contact randomized together::

        dist = ParameterDistribution({
            ("model.mass", "model.inertia"): uniform_scale(0.8, 1.2),   # inertia stays physical
            "model.damping": log_uniform_scale(0.5, 2.0),
            "contact.stiffness": uniform_scale(0.5, 1.5),
        })
        sample = dist(key, {"model": model, "contact": ground})
    """

    def __init__(self, spec: Mapping[str | tuple[str, ...], Sampler] | None = None, /, **entries: Sampler):
        spec = dict(spec or {})
        spec.update(entries)
        self.entries: list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...], bool, Sampler]] = []
        for path, sampler in spec.items():
            paths = path if isinstance(path, tuple) else (path,)
            if not paths:
                raise ValueError("a parameter path tuple must name at least one path")
            if not callable(sampler):
                raise TypeError(f"parameter {path!r}: the sampler must be callable as sampler(key, nominal), "
                                f"got {type(sampler).__name__}")
            self.entries.append((paths, tuple(_split_path(p) for p in paths), isinstance(path, tuple), sampler))

    def __repr__(self) -> str:
        return f"ParameterDistribution({[p if t else p[0] for p, _, t, _ in self.entries]})"

    def __call__(self, key: jax.Array, nominal: Any) -> Any:
        out = nominal
        for paths, parts, is_tuple, sampler in self.entries:
            name = "+".join(paths)
            nominals = tuple(_get(nominal, p, path) for p, path in zip(parts, paths))
            for n, path in zip(nominals, paths):
                if not eqx.is_array(n):
                    raise ValueError(f"parameter {path!r} is a {type(n).__name__}, not an array: "
                                     "only array fields can be randomized")
            value = sampler(jax.random.fold_in(key, _seed(name)), nominals if is_tuple else nominals[0])
            values = value if is_tuple else (value,)
            if not isinstance(values, tuple) or len(values) != len(paths):
                raise ValueError(f"parameters {paths}: the sampler must return a tuple of {len(paths)} values")
            checked = []
            for v, n, path in zip(values, nominals, paths):
                v = jnp.asarray(v)
                if v.shape != n.shape:
                    raise ValueError(f"parameter {path!r}: the sampler returned shape {v.shape}, "
                                     f"the nominal value has shape {n.shape}")
                checked.append(v.astype(n.dtype))
            out = eqx.tree_at(lambda t, parts=parts, paths=paths: [_get(t, p, q) for p, q in zip(parts, paths)],
                              out, checked)
        return out


def randomize(tree: Any, key: jax.Array, spec: Mapping[str | tuple[str, ...], Sampler] | None = None,
              /, **entries: Sampler) -> Any:
    """One random version of ``tree``: ``ParameterDistribution(spec, **entries)(key, tree)``.

    ``randomize(model, key, damping=normal_noise(0.01), armature=uniform_scale(0.9, 1.1))``;
    tuple paths go in ``spec``: ``randomize(model, key, {("mass", "inertia"): uniform_scale(0.8, 1.2)})``.
    """
    return ParameterDistribution(spec, **entries)(key, tree)


def _check_positive_range(low, high, what: str) -> None:
    if not (np.all(np.asarray(low) > 0) and np.all(np.asarray(high) >= np.asarray(low))):
        raise ValueError(f"{what}: need 0 < low <= high (a positive scale factor), got low={low!r}, high={high!r}")


def _factor_shape(nominals, shared: bool) -> tuple[int, ...]:
    first = nominals[0] if isinstance(nominals, tuple) else nominals
    return () if shared else tuple(first.shape)


def _scale(nominals, factor):
    def one(x):
        if x.shape[: factor.ndim] != factor.shape:
            raise ValueError(f"a scale factor of shape {factor.shape} (the first parameter's) does not lead "
                             f"shape {x.shape}: list the parameter with the fewest axes first, "
                             "e.g. ('mass', 'inertia')")
        return x * factor.reshape(factor.shape + (1,) * (x.ndim - factor.ndim)).astype(x.dtype)

    return tuple(one(x) for x in nominals) if isinstance(nominals, tuple) else one(nominals)


def _dtype(nominals):
    x = nominals[0] if isinstance(nominals, tuple) else nominals
    return x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.zeros(()).dtype


def uniform_scale(low: float, high: float, *, shared: bool = False) -> Sampler:
    """``nominal · s``, ``s ~ U(low, high)`` (``0 < low ≤ high``), one factor per element of the
    (first) nominal, or one for the whole parameter with ``shared=True``.  For a tuple of
    parameters the factor has the first one's shape and multiplies the others along their
    leading axes: ``("mass", "inertia")`` scales each body's mass and inertia alike."""
    _check_positive_range(low, high, "uniform_scale")

    def sample(key, nominal):
        s = jax.random.uniform(key, _factor_shape(nominal, shared), _dtype(nominal), low, high)
        return _scale(nominal, s)

    return sample


def log_uniform_scale(low: float, high: float, *, shared: bool = False) -> Sampler:
    """``nominal · s`` with ``log s ~ U(log low, log high)``: a factor spread evenly over orders
    of magnitude (``log_uniform_scale(0.5, 2.0)`` halves as often as it doubles).  Shapes as
    :func:`uniform_scale`."""
    _check_positive_range(low, high, "log_uniform_scale")

    def sample(key, nominal):
        u = jax.random.uniform(key, _factor_shape(nominal, shared), _dtype(nominal), np.log(low), np.log(high))
        return _scale(nominal, jnp.exp(u))

    return sample


def normal_noise(std: float, *, low: float | None = None, high: float | None = None) -> Sampler:
    """``nominal + std · N(0, 1)`` per element, clipped to ``[low, high]`` where given (e.g.
    ``low=0`` for a damping).  For a tuple of parameters, independent noise on each.  Not for
    inertias (noise can make them unphysical): scale them with :func:`uniform_scale`."""
    if not np.all(np.asarray(std) >= 0):
        raise ValueError(f"normal_noise: std must be non-negative, got {std!r}")

    def one(key, x):
        y = x + std * jax.random.normal(key, x.shape, _dtype(x))
        return jnp.clip(y, low, high) if low is not None or high is not None else y

    def sample(key, nominal):
        if isinstance(nominal, tuple):
            return tuple(one(jax.random.fold_in(key, i), x) for i, x in enumerate(nominal))
        return one(key, nominal)

    return sample


def uniform(low, high) -> Sampler:
    """A value drawn uniformly in ``[low, high]`` per element, ignoring the nominal (e.g. a
    friction coefficient in ``[0.5, 1.2]``).  ``low``/``high`` broadcast to the nominal's shape."""
    if not np.all(np.asarray(high) >= np.asarray(low)):
        raise ValueError(f"uniform: need low <= high, got low={low!r}, high={high!r}")

    def sample(key, nominal):
        if isinstance(nominal, tuple):
            raise ValueError("uniform draws one parameter; give it a single path")
        return jax.random.uniform(key, nominal.shape, _dtype(nominal), jnp.asarray(low), jnp.asarray(high))

    return sample


__all__ = ["ParameterDistribution", "Sampler", "log_uniform_scale", "normal_noise", "path_name", "randomize", "uniform",
           "uniform_scale"]
