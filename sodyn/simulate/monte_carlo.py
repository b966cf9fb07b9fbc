"""Batched Monte Carlo simulation: randomized parameters, sampled initial states, many rollouts.

Three parts, each usable alone:

* **Parameter distributions.**  :class:`ParameterDistribution` (and :func:`randomize`) draws a
  random version of any equinox pytree (a :class:`~sodyn.Model`, a contact model, a policy's
  parameters, or a dict of them) from a mapping ``path -> sampler``.  A path names a field by
  attributes, dict keys and indices joined with dots (``"mass"``, ``"actuators.gain"``,
  ``"model.damping"``, ``"contact.stiffness"``); a sampler is ``sampler(key, nominal) -> value``
  with ``value`` of the nominal's shape.  A tuple of paths gets a tuple of nominals and returns a
  tuple: ``("mass", "inertia"): uniform_scale(0.8, 1.2)`` scales each body's mass and rotational
  inertia by one factor, which keeps the inertia physical (positive definite, triangle
  inequality) and the centre of mass where it is.  Helpers: :func:`uniform_scale`,
  :func:`log_uniform_scale`, :func:`normal_noise`, :func:`uniform`.
* **State samplers.**  :func:`home_state` perturbs the neutral (or a keyframe) configuration on
  the manifold (hinges clipped to their limits, quaternions kept unit) and lifts floating bases
  above the ground plane ``z = 0``; :func:`home_sampler` makes the ``(key, model) -> State``
  sampler that :func:`monte_carlo` takes.
* **:func:`monte_carlo`** draws ``batch`` parameter samples and initial states and runs one
  rollout per sample, vmapped over both (the model's array leaves are batched, its static
  topology shared), in chunks of equal size from a host loop (one compilation; the last chunk
  is padded) with a progress bar.  Inside a chunk, :func:`sodyn.batch` maps the samples in
  cache-sized pieces and splits them across JAX devices when there are several (it keeps a
  function that calls LAPACK on one device: jaxlib's batched LAPACK kernels deadlock when split
  across CPU devices).  It returns summary statistics and, on request, final states or whole
  trajectories (:mod:`~sodyn.simulate.results`).  With ``store=FOLDER`` each finished chunk is
  written there at once and ``resume=True`` continues an interrupted run
  (:mod:`~sodyn.simulate.store`, :mod:`~sodyn.simulate.chunks`).

Sample ``i`` of a run is a pure function of ``keys = sample_keys(key, batch)``::

    nominal = {"model": model, **array-carrying rollout keyword arguments}   # e.g. contact=...
    sample  = sample_params(param_keys[i], nominal)        # same structure as nominal
    state   = sample_state(state_keys[i], sample["model"])
    rollout(sample["model"], state, controls, dt, steps, **sample minus "model", **other kwargs)

so any sample can be recomputed alone (the tests compare 8 of 1024 samples with this loop).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Literal

from sodyn.algorithms.common import check_vector
from sodyn.algorithms.kinematics import forward_kinematics, kinetic_energy, potential_energy
from sodyn.configuration import integrate
from sodyn.joints import KERNEL_OF
from sodyn.model import Model
from sodyn.runtime.batching import _batch_devices, _sample_jaxpr, intermediate_bytes
from sodyn.runtime.batching import batch as sd_batch
from sodyn.runtime.clock import CompileClock
from sodyn.runtime.precision import full_precision
from sodyn.runtime.tuning import MONTE_CARLO_CPU_CHUNK, MONTE_CARLO_MEMORY_FRACTION
from sodyn.runtime.xla import jit
from sodyn.simulate.chunks import run_chunks
from sodyn.simulate.ground import GroundContact
from sodyn.simulate.results import MonteCarloResult, Stats, _Running  # noqa: F401 - re-exported
from sodyn.simulate.rollout import rollout as default_rollout
from sodyn.simulate.state import State
from sodyn.simulate.store import parameters_hash, read_manifest

Sampler = Callable[[jax.Array, Any], Any]
KEEP = ("summary", "final", "trajectories")


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


def _path_name(key_path) -> str:
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


# ---------------------------------------------------------------------------
# initial states
# ---------------------------------------------------------------------------


def _floating_roots(model: Model) -> list[int]:
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

    roots = _floating_roots(model)
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


# ---------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------


def default_summary(rollout, model: Model) -> dict[str, jax.Array]:
    """The default per-sample summary: ``energy (steps,)`` (kinetic + gravitational potential
    energy of the multibody after each step), ``final_q (nq,)``, ``finite ()`` (every state
    finite), and for a model with a floating base ``base_height (steps,)`` (the first root
    free joint's ``z``)."""
    q, v = rollout.states.q, rollout.states.v
    # one state at a time (a scan, not a vmap over the steps): the working set of one step's
    # energy, so sodyn.batch sizes the rollout's chunks by the rollout, not by steps × energy
    energy = jax.lax.map(lambda qv: kinetic_energy(model, *qv) + potential_energy(model, qv[0]), (q, v))
    out = {
        "energy": energy,
        "final_q": q[-1],
        "finite": jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v)),
    }
    roots = _floating_roots(model)
    if roots:
        out["base_height"] = q[:, int(model.topology.q_start[roots[0]]) + 2]
    return out


def _takes_model(fn: Callable) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


# ---------------------------------------------------------------------------
# monte_carlo
# ---------------------------------------------------------------------------


def sample_keys(key: jax.Array, batch: int) -> tuple[jax.Array, jax.Array]:
    """``(param_keys, state_keys)``, each ``(batch, ...)``: the keys of every sample of a
    :func:`monte_carlo` run with ``key``."""
    k_params, k_states = jax.random.split(key)
    return jax.random.split(k_params, batch), jax.random.split(k_states, batch)


def _nominal(key: jax.Array, nominal: Any) -> Any:
    """The ``sample_params`` of a run without parameter randomization."""
    return nominal


def _key_dependent(jaxpr) -> list[bool]:
    """For each output of a closed jaxpr, whether it depends on the inputs (not only on constants)."""
    dep = set(id(v) for v in jaxpr.jaxpr.invars)
    for eqn in jaxpr.jaxpr.eqns:
        if any(id(v) in dep for v in eqn.invars if not isinstance(v, Literal)):
            dep.update(id(v) for v in eqn.outvars)
    return [not isinstance(v, Literal) and id(v) in dep for v in jaxpr.jaxpr.outvars]


def _timed(fn: Callable[..., MonteCarloResult]) -> Callable[..., MonteCarloResult]:
    """``fn`` with its result's ``seconds`` (wall time) and ``compile_seconds`` filled in."""

    @functools.wraps(fn)
    def timed(*args, **kwargs) -> MonteCarloResult:
        start = time.perf_counter()
        with CompileClock() as clock:
            result = fn(*args, **kwargs)
        total = time.perf_counter() - start
        return dataclasses.replace(result, seconds=total, compile_seconds=min(clock.seconds(), total))

    return timed


def accelerator_chunk(device, per_sample_bytes: int) -> int:
    """Samples per chunk on an accelerator ``device``: as many as fit
    :data:`~sodyn.runtime.tuning.MONTE_CARLO_MEMORY_FRACTION` of its memory at
    ``per_sample_bytes`` each (at least one); :data:`~sodyn.runtime.tuning.MONTE_CARLO_CPU_CHUNK`
    when the device does not report its memory."""
    stats = device.memory_stats() or {}
    limit = stats.get("bytes_limit")
    if not limit:
        return MONTE_CARLO_CPU_CHUNK
    return max(1, int(limit * MONTE_CARLO_MEMORY_FRACTION) // max(int(per_sample_bytes), 1))


@_timed
def monte_carlo(
    model: Model,
    sample_params: ParameterDistribution | Callable | Mapping | None,
    sample_state: Callable | None,
    policy_or_controls: Callable | jax.Array | None,
    dt: float,
    steps: int,
    batch: int,
    key: jax.Array,
    *,
    chunk: int | None = None,
    progress: bool = True,
    keep: str = "summary",
    summary: Callable | None = None,
    devices: str | Sequence[Any] | None = "auto",
    simulate: Callable | None = None,
    store: str | os.PathLike | None = None,
    resume: bool = False,
    **rollout_kwargs: Any,
) -> MonteCarloResult:
    """Run ``batch`` rollouts with randomized parameters and initial states.

    - ``sample_params(key, nominal) -> sample``: ``nominal`` is the dict
      ``{"model": model, **rollout_kwargs}`` restricted to the keyword arguments that carry
      arrays (``contact=``, ``actuators=``, ``f_ext=``, ``params=`` a policy's parameters);
      the sample must have the same structure and shapes.  A :class:`ParameterDistribution`,
      a mapping (made into one; paths start with ``"model."`` etc.), or ``None`` (nominal).
    - ``sample_state(key, model) -> State`` (``q (nq,)``, ``v (nv,)``, ``t``), e.g.
      :func:`home_sampler`; ``None``: :func:`home_state` without noise (neutral
      configuration, floating bases lifted above the ground).
    - ``policy_or_controls``: ``None``, an array ``(steps, nu)`` shared by every sample, or a
      policy ``control = policy(params, t, state)`` (randomize ``params`` for per-sample gains).
    - ``dt``, ``steps`` and the other ``rollout_kwargs`` (``integrator=``, ``substeps=``, ...)
      go to the rollout unchanged.
    - ``batch`` samples run in host chunks of ``chunk`` samples (default: the whole batch up to
      1024 per CPU device; on an accelerator, up to as many as fit a quarter of its memory,
      :func:`accelerator_chunk`), one compiled program for all chunks (the last one padded);
      ``progress=True`` shows a progress bar (tqdm when installed, else a line on stderr).
      ``devices`` is :func:`sodyn.batch`'s (``"auto"``: split across every local device).
    - ``keep``: ``"summary"`` (statistics only), ``"final"`` (also final states) or
      ``"trajectories"`` (also every rollout, ``(batch, steps, ...)``).
    - ``summary(rollout) -> dict`` or ``summary(rollout, model) -> dict`` of per-sample arrays
      (a ``finite`` entry marks the samples the statistics include); default
      :func:`default_summary`.
    - ``simulate``: the rollout function, ``simulate(model, state, controls, dt, steps, **kw)
      -> Rollout(states, tau, contact_force)``; default ``sodyn.simulate.rollout``.

    - ``store``: a folder that receives each chunk's results as it finishes, with a manifest
      of the run (:mod:`sodyn.simulate.store`); a folder that already holds a run is refused
      unless ``resume=True``, which loads its finished chunks and runs only the others (the
      result equals the uninterrupted run's bit for bit; a manifest that does not match the
      call raises :class:`~sodyn.simulate.store.StoreMismatchError` naming what differs; with
      ``chunk=None`` the stored chunk size is used).  Ctrl-C (``KeyboardInterrupt``) or any
      error keeps the finished chunks on disk and propagates: no partial result is returned.

    Sample ``i`` uses ``sample_keys(key, batch)[0][i]`` and ``[1][i]`` (see the module doc),
    so its result equals a direct call on those keys.  The result also holds the call's wall
    time and compile time (``seconds``, ``compile_seconds``): each call compiles its program anew.
    """
    # -- arguments --------------------------------------------------------------
    if not isinstance(model, Model):
        raise TypeError(f"model must be a sodyn.Model, got {type(model).__name__}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch <= 0:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    batch = int(batch)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps <= 0:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk <= 0):
        raise ValueError(f"chunk must be a positive integer or None, got {chunk!r}")
    for name, flag in (("progress", progress), ("resume", resume)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    if keep not in KEEP:
        raise ValueError(f"keep must be one of {KEEP}, got {keep!r}")
    if np.ndim(dt) != 0 or not np.isfinite(float(dt)) or float(dt) <= 0:
        raise ValueError(f"dt must be a positive number, got {dt!r}")
    if isinstance(sample_params, Mapping):
        sample_params = ParameterDistribution(sample_params)
    if sample_params is None:
        sample_params = _nominal
    if not callable(sample_params):
        raise TypeError(f"sample_params must be callable as sample_params(key, nominal), a mapping or None, "
                        f"got {type(sample_params).__name__}")
    if sample_state is None:
        sample_state = home_sampler(noise=0.0, orientation_noise=0.0)
    if not callable(sample_state):
        raise TypeError(f"sample_state must be callable as sample_state(key, model) or None, "
                        f"got {type(sample_state).__name__}")
    if summary is not None and not callable(summary):
        raise TypeError(f"summary must be callable as summary(rollout) or summary(rollout, model), "
                        f"got {type(summary).__name__}")
    simulate = default_rollout if simulate is None else simulate
    summarize = default_summary if summary is None else summary
    summary_takes_model = summary is None or _takes_model(summary)
    controls = policy_or_controls
    controls_arg = None if controls is None or callable(controls) else jnp.asarray(controls)
    if controls_arg is not None and controls_arg.ndim != 2:
        raise ValueError(f"policy_or_controls must be None, a policy or an array (steps, nu), "
                         f"got shape {controls_arg.shape}")
    if controls_arg is not None and controls_arg.shape[0] != steps:
        raise ValueError(f"policy_or_controls has {controls_arg.shape[0]} rows for steps={steps}")

    # the nominal: the model and every keyword argument that carries arrays
    data_names = [k for k, v in rollout_kwargs.items() if v is not None and jax.tree_util.tree_leaves(
        eqx.filter(v, eqx.is_array))]
    nominal = {"model": model, **{k: rollout_kwargs[k] for k in data_names}}
    static_kwargs = {k: v for k, v in rollout_kwargs.items() if k not in data_names}
    nominal_arrays, nominal_static = eqx.partition(nominal, eqx.is_array)

    typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
    param_keys, state_keys = sample_keys(key, batch)
    if typed:
        impl = jax.random.key_impl(key)
        param_keys, state_keys = jax.random.key_data(param_keys), jax.random.key_data(state_keys)
        wrap = lambda k: jax.random.wrap_key_data(k, impl=impl)  # noqa: E731
    else:
        wrap = lambda k: k  # noqa: E731

    # -- one trace of the samplers: shapes checked, parameters that vary found ------------
    leaf_paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(nominal_arrays)[0]]
    nominal_leaves, nominal_def = jax.tree_util.tree_flatten(nominal_arrays)

    def draw_with(pkey, arrays):
        sample = sample_params(wrap(pkey), eqx.combine(arrays, nominal_static))
        return eqx.filter(sample, eqx.is_array)

    jaxpr, sample_shape = jax.make_jaxpr(lambda k: draw_with(k, nominal_arrays), return_shape=True)(param_keys[0])
    sample_leaves, sample_def = jax.tree_util.tree_flatten(sample_shape)
    if sample_def != nominal_def:
        raise ValueError("sample_params must return a pytree of the nominal's structure "
                         f"({{'model': ..., {', '.join(repr(k) for k in data_names)}}}); got {sample_def}")
    for path, s, n in zip(leaf_paths, sample_leaves, nominal_leaves):
        if s.shape != n.shape:
            raise ValueError(f"sample_params: parameter {_path_name(path)!r} has shape {s.shape}, "
                             f"the nominal has shape {n.shape}")
    varied = _key_dependent(jaxpr)
    varied_names = [_path_name(p) for p, d in zip(leaf_paths, varied) if d]

    state_shape = jax.eval_shape(lambda k: sample_state(wrap(k), model), state_keys[0])
    for field, size in (("q", model.nq), ("v", model.nv)):
        got = getattr(state_shape, field, None)
        if got is None or got.shape != (size,):
            raise ValueError(f"sample_state must return a State with {field} of shape ({size},), "
                             f"got {None if got is None else got.shape}")

    # -- one sample ----------------------------------------------------------------
    def one(pkey, skey, arrays, controls_arr):
        sample = eqx.combine(draw_with(pkey, arrays), nominal_static)
        m = sample["model"]
        state = sample_state(wrap(skey), m)
        kwargs = {k: sample[k] for k in data_names}
        ro = simulate(m, state, controls if controls_arr is None else controls_arr, dt, steps,
                      **kwargs, **static_kwargs)
        s = summarize(ro, m) if summary_takes_model else summarize(ro)
        if not isinstance(s, Mapping):
            raise TypeError(f"summary must return a dict of arrays, got {type(s).__name__}")
        leaves = [x for x, d in zip(jax.tree_util.tree_leaves(eqx.filter(sample, eqx.is_array)), varied) if d]
        out = {"summary": dict(s), "initial": state, "params": leaves}
        if keep == "final":
            out["final"] = jax.tree_util.tree_map(lambda x: x[-1], ro.states)
        elif keep == "trajectories":
            out["trajectories"] = ro
        return out

    # -- chunks --------------------------------------------------------------------
    n_dev = max(1, len(_batch_devices(devices)))
    in_axes = (0, 0, None, None)
    pk, sk = np.asarray(param_keys), np.asarray(state_keys)
    if chunk is None and resume and store is not None:
        chunk = (read_manifest(store) or {}).get("chunk")  # resume in the stored chunks
    if chunk is None:
        per_device = MONTE_CARLO_CPU_CHUNK
        if jax.default_backend() != "cpu":
            per_sample = intermediate_bytes(_sample_jaxpr(one, in_axes, (pk, sk, nominal_arrays, controls_arg)))
            per_device = accelerator_chunk((_batch_devices(devices) or jax.local_devices())[0], per_sample)
        chunk = min(-(-batch // n_dev) * n_dev, per_device * n_dev)
    chunk = int(chunk)
    n_chunks = -(-batch // chunk)
    pad = n_chunks * chunk - batch
    if pad:
        pk = np.concatenate([pk, np.repeat(pk[-1:], pad, 0)])
        sk = np.concatenate([sk, np.repeat(sk[-1:], pad, 0)])
    first = (pk[:chunk], sk[:chunk], nominal_arrays, controls_arg)
    if jax.default_backend() == "cpu":
        inner = min(sd_batch(one, in_axes, devices=devices).chunk_size(*first), -(-chunk // n_dev))
    else:  # accelerators: one vmap over each device's share
        inner = -(-chunk // n_dev)
    run = jit(sd_batch(one, in_axes, chunk_size=max(1, inner), devices=devices))

    collector = run_chunks(run, lambda sl: (pk[sl], sk[sl], nominal_arrays, controls_arg), first, batch=batch,
                           chunk=chunk, progress=progress, store=store, resume=resume, identity={
                               "model": model.name, "parameters": parameters_hash(nominal_arrays, controls_arg),
                               "batch": batch, "chunk": chunk, "steps": int(steps), "dt": float(dt),
                               "key": np.asarray(jax.random.key_data(key) if typed else key).tolist(),
                               "keep": keep, "params": varied_names})
    return collector.result(batch, varied_names, param_keys, state_keys)


__all__ = [
    "MonteCarloResult", "ParameterDistribution", "Sampler", "Stats", "default_summary", "home_sampler", "home_state",
    "log_uniform_scale", "monte_carlo", "normal_noise", "randomize", "sample_keys", "uniform",
    "uniform_scale",
]
