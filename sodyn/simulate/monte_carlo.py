"""Batched Monte Carlo simulation: randomized parameters, sampled initial states, many rollouts.

Four parts, each usable alone:

* **Parameter distributions** (:mod:`~sodyn.simulate.distributions`):
  :class:`ParameterDistribution` and :func:`randomize` draw a random version of any equinox
  pytree from a mapping ``path -> sampler`` (:func:`uniform_scale`, :func:`log_uniform_scale`,
  :func:`normal_noise`, :func:`uniform`).
* **Initial states** (:mod:`~sodyn.simulate.initial_states`): :func:`home_state` perturbs the
  home configuration on the manifold and lifts floating bases above the ground;
  :func:`home_sampler` makes the ``(key, model) -> State`` sampler that :func:`monte_carlo`
  takes.
* **Accumulation and storage**: summary statistics and, on request, final states or whole
  trajectories (:mod:`~sodyn.simulate.results`); with ``store=FOLDER`` each finished chunk is
  written there at once and ``resume=True`` continues an interrupted run
  (:mod:`~sodyn.simulate.store`, :mod:`~sodyn.simulate.chunks`).
* **:func:`monte_carlo`** (here, with the chunk policy :func:`accelerator_chunk`) draws
  ``batch`` parameter samples and initial states and runs one rollout per sample, vmapped over
  both (the model's array leaves are batched, its static topology shared), in chunks of equal
  size from a host loop (one compilation; the last chunk is padded) with a progress bar.  Inside
  a chunk, :func:`sodyn.batch` maps the samples in cache-sized pieces and splits them across JAX
  devices when there are several (it keeps a function that calls LAPACK on one device: jaxlib's
  batched LAPACK kernels deadlock when split across CPU devices).

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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Literal

from sodyn.algorithms.kinematics import kinetic_energy, potential_energy
from sodyn.model import Model
from sodyn.runtime.batching import batch as sd_batch
from sodyn.runtime.batching import batch_devices, intermediate_bytes, sample_jaxpr
from sodyn.runtime.clock import CompileClock
from sodyn.runtime.tuning import MONTE_CARLO_CPU_CHUNK, MONTE_CARLO_MEMORY_FRACTION
from sodyn.runtime.xla import jit
from sodyn.simulate.chunks import run_chunks
from sodyn.simulate.distributions import (  # noqa: F401 - re-exported
    ParameterDistribution,
    Sampler,
    log_uniform_scale,
    normal_noise,
    path_name,
    randomize,
    uniform,
    uniform_scale,
)
from sodyn.simulate.initial_states import floating_roots, home_sampler, home_state  # noqa: F401 - re-exported
from sodyn.simulate.results import MonteCarloResult, Stats  # noqa: F401 - re-exported
from sodyn.simulate.rollout import rollout as default_rollout
from sodyn.simulate.store import parameters_hash, read_manifest

KEEP = ("summary", "final", "trajectories")

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
    roots = floating_roots(model)
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


#: The largest parameter (elements) that :func:`monte_carlo` folds into its program as a
#: constant when the samplers leave it unchanged (larger constants slow compilation).
FOLDED_SIZE = 4096


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


def chunk_sizes(one: Callable, in_axes, args: tuple, batch: int, chunk: int | None,
                devices: str | Sequence[Any] | None) -> tuple[int, int]:
    """The chunk policy of :func:`monte_carlo`: ``(host chunk, inner chunk)`` for mapping
    ``one`` over ``batch`` samples of ``args`` (batched along ``in_axes``).

    The host chunk is the number of samples per call of the compiled program: ``chunk`` if
    given, else the whole batch up to :data:`~sodyn.runtime.tuning.MONTE_CARLO_CPU_CHUNK` per
    device on the CPU, and on an accelerator as many as fit its memory
    (:func:`accelerator_chunk`).  Inside a call, :func:`sodyn.batch` maps each device's share in
    inner chunks: its cache-sized automatic chunk on the CPU, the whole share on an
    accelerator."""
    n_dev = max(1, len(batch_devices(devices)))
    if chunk is None:
        per_device = MONTE_CARLO_CPU_CHUNK
        if jax.default_backend() != "cpu":
            per_sample = intermediate_bytes(sample_jaxpr(one, in_axes, args))
            per_device = accelerator_chunk((batch_devices(devices) or jax.local_devices())[0], per_sample)
        chunk = min(-(-batch // n_dev) * n_dev, per_device * n_dev)
    chunk = int(chunk)
    share = -(-chunk // n_dev)
    if jax.default_backend() != "cpu":  # accelerators: one vmap over each device's share
        return chunk, max(1, share)
    first = tuple(jax.tree_util.tree_map(lambda x: x[:chunk], a) if ax == 0 else a for a, ax in zip(args, in_axes))
    return chunk, max(1, min(sd_batch(one, in_axes, devices=devices).chunk_size(*first), share))


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
            raise ValueError(f"sample_params: parameter {path_name(path)!r} has shape {s.shape}, "
                             f"the nominal has shape {n.shape}")
    varied = _key_dependent(jaxpr)
    varied_names = [path_name(p) for p, d in zip(leaf_paths, varied) if d]
    # a parameter the samplers do not vary is the same in every sample: small ones enter the
    # program as constants, so that the terms they zero are skipped (may_be_nonzero)
    fixed = [None if d or np.size(x) > FOLDED_SIZE else x
             for x, d in zip(jax.tree_util.tree_leaves(draw_with(param_keys[0], nominal_arrays)), varied)]

    state_shape = jax.eval_shape(lambda k: sample_state(wrap(k), model), state_keys[0])
    for field, size in (("q", model.nq), ("v", model.nv)):
        got = getattr(state_shape, field, None)
        if got is None or got.shape != (size,):
            raise ValueError(f"sample_state must return a State with {field} of shape ({size},), "
                             f"got {None if got is None else got.shape}")

    # -- one sample ----------------------------------------------------------------
    def one(pkey, skey, arrays, controls_arr):
        drawn = jax.tree_util.tree_leaves(draw_with(pkey, arrays))
        drawn = [x if f is None else f for x, f in zip(drawn, fixed)]
        sample = eqx.combine(jax.tree_util.tree_unflatten(sample_def, drawn), nominal_static)
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
    in_axes = (0, 0, None, None)
    pk, sk = np.asarray(param_keys), np.asarray(state_keys)
    if chunk is None and resume and store is not None:
        chunk = (read_manifest(store) or {}).get("chunk")  # resume in the stored chunks
    chunk, inner = chunk_sizes(one, in_axes, (pk, sk, nominal_arrays, controls_arg), batch, chunk, devices)
    n_chunks = -(-batch // chunk)
    pad = n_chunks * chunk - batch
    if pad:
        pk = np.concatenate([pk, np.repeat(pk[-1:], pad, 0)])
        sk = np.concatenate([sk, np.repeat(sk[-1:], pad, 0)])
    first = (pk[:chunk], sk[:chunk], nominal_arrays, controls_arg)
    run = jit(sd_batch(one, in_axes, chunk_size=inner, devices=devices))

    collector = run_chunks(run, lambda sl: (pk[sl], sk[sl], nominal_arrays, controls_arg), first, batch=batch,
                           chunk=chunk, progress=progress, store=store, resume=resume, identity={
                               "model": model.name, "parameters": parameters_hash(nominal_arrays, controls_arg),
                               "batch": batch, "chunk": chunk, "steps": int(steps), "dt": float(dt),
                               "key": np.asarray(jax.random.key_data(key) if typed else key).tolist(),
                               "keep": keep, "params": varied_names})
    return collector.result(batch, varied_names, param_keys, state_keys)


__all__ = [
    "MonteCarloResult", "ParameterDistribution", "Sampler", "Stats", "default_summary", "home_sampler", "home_state",
    "chunk_sizes", "log_uniform_scale", "monte_carlo", "normal_noise", "randomize", "sample_keys", "uniform",
    "uniform_scale",
]
