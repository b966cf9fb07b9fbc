"""What :func:`sodyn.monte_carlo` returns, and how it is assembled from the run's chunks.

:class:`MonteCarloResult` holds host NumPy arrays; its :meth:`~MonteCarloResult.summary` (also
its ``repr``) is a table of every summary quantity: mean, std, min, max and the number of finite
samples.  :class:`Collector` folds the chunks in order (streaming statistics, Chan et al.'s
parallel update) whether a chunk was just computed or loaded from a store
(:mod:`sodyn.simulate.store`): the same chunks in the same order give the same bits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np


@dataclasses.dataclass(frozen=True)
class Stats:
    """Statistics of one summary quantity over the samples that stayed finite: each array has
    the quantity's per-sample shape (e.g. ``(steps,)`` for a per-step quantity)."""

    mean: np.ndarray
    std: np.ndarray
    min: np.ndarray
    max: np.ndarray
    count: int


class _Running:
    """Mean, variance (Chan et al.'s parallel update), min and max over chunks of samples."""

    def __init__(self):
        self.n = 0
        self.mean = self.m2 = self.lo = self.hi = None

    def update(self, x: np.ndarray, keep: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)[keep]
        nb = x.shape[0]
        if nb == 0:
            return
        mb, m2b = x.mean(0), ((x - x.mean(0)) ** 2).sum(0)
        if self.n == 0:
            self.mean, self.m2, self.lo, self.hi = mb, m2b, x.min(0), x.max(0)
        else:
            n = self.n + nb
            d = mb - self.mean
            self.mean = self.mean + d * nb / n
            self.m2 = self.m2 + m2b + d * d * self.n * nb / n
            self.lo, self.hi = np.minimum(self.lo, x.min(0)), np.maximum(self.hi, x.max(0))
        self.n += nb

    def stats(self, shape) -> Stats:
        if self.n == 0:
            nan = np.full(shape, np.nan)
            return Stats(nan, nan, nan, nan, 0)
        return Stats(self.mean, np.sqrt(self.m2 / self.n), self.lo, self.hi, self.n)


@dataclasses.dataclass(frozen=True)
class MonteCarloResult:
    """What :func:`monte_carlo` returns (host NumPy arrays; leading axis = sample).

    - ``stats``: name -> :class:`Stats` of each summary quantity over the samples that stayed
      finite; ``values``: name -> ``(batch,)`` per-sample values of the scalar quantities;
      ``finite (batch,)``: whether each sample's summary ``finite`` flag held (all True without one);
    - ``params``: path -> ``(batch, ...)`` the sampled parameters that depend on the sample's
      key (e.g. ``"model.mass"``); ``initial``: the initial states (a batched ``State``);
    - ``final``: the final states (``keep="final"`` or ``"trajectories"``), ``trajectories``:
      the rollouts (``keep="trajectories"``), else ``None``;
    - ``param_keys``, ``state_keys``: the keys of each sample (:func:`sample_keys`);
    - ``seconds``: the call's wall time, ``compile_seconds``: the part of it JAX spent tracing
      and compiling (:class:`sodyn.runtime.clock.CompileClock`), so a run's throughput is
      ``batch · steps / (seconds − compile_seconds)`` sample-steps per second.

    ``print(result)`` shows :meth:`summary`, a table of the statistics.
    """

    batch: int
    stats: dict[str, Stats]
    values: dict[str, np.ndarray]
    finite: np.ndarray
    params: dict[str, np.ndarray]
    initial: Any
    final: Any
    trajectories: Any
    param_keys: np.ndarray
    state_keys: np.ndarray
    seconds: float = float("nan")
    compile_seconds: float = float("nan")

    def summary(self) -> str:
        """A table, one row per summary quantity: mean, std, min, max over the finite samples and
        their count.  A scalar quantity's row holds its statistics; an array quantity (e.g.
        ``energy (steps,)``) is summarised over its elements: the mean of the means, the largest
        std, the smallest min and the largest max, its shape in the first column."""
        n_finite = int(np.sum(self.finite))
        head = (f"MonteCarloResult: {self.batch} samples, {n_finite} finite, "
                f"{self.seconds:.2f} s ({self.compile_seconds:.2f} s compiling)")
        rows = [(f"{'quantity':24s} {'mean':>11s} {'std':>11s} {'min':>11s} {'max':>11s} {'finite':>7s}")]
        for name, s in self.stats.items():
            mean, std, lo, hi = (np.asarray(x, np.float64) for x in (s.mean, s.std, s.min, s.max))
            label = name if mean.ndim == 0 else f"{name} {mean.shape}"
            empty = mean.size == 0 or s.count == 0
            cells = [np.nan] * 4 if empty else [mean.mean(), std.max(), lo.min(), hi.max()]
            rows.append(f"{label[:24]:24s} " + " ".join(f"{float(c):11.4g}" for c in cells) + f" {s.count:7d}")
        return "\n".join([head, *rows])

    def __repr__(self) -> str:
        return self.summary()


def concatenate(parts: Sequence[Any]) -> Any:
    """The pytrees ``parts`` concatenated leaf by leaf along the sample axis."""
    return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *parts)


class Collector:
    """The chunks of a run, folded in order into a :class:`MonteCarloResult` (module doc).  A
    chunk is the host pytree ``{"summary": {...}, "initial": State, "params": [...],
    ["final": State | "trajectories": Rollout]}`` of its ``real`` samples."""

    def __init__(self):
        self.running: dict[str, _Running] = {}
        self.shapes: dict[str, tuple] = {}
        self.scalars: dict[str, list] = {}
        self.finite: list[np.ndarray] = []
        self.chunks: dict[str, list] = {"params": [], "initial": [], "final": [], "trajectories": []}

    def add(self, out: dict, real: int) -> None:
        s = out["summary"]
        fin = np.asarray(s["finite"], bool).reshape(real) if "finite" in s else np.ones(real, bool)
        self.finite.append(fin)
        for name, x in s.items():
            self.shapes[name] = x.shape[1:]
            self.running.setdefault(name, _Running()).update(x, fin)
            if x.ndim == 1:
                self.scalars.setdefault(name, []).append(x)
        for part in self.chunks:
            if part in out:
                self.chunks[part].append(out[part])

    def result(self, batch: int, varied_names: Sequence[str], param_keys, state_keys) -> MonteCarloResult:
        params = concatenate(self.chunks["params"]) if varied_names else []
        final, traj = self.chunks["final"], self.chunks["trajectories"]
        return MonteCarloResult(
            batch=batch,
            stats={name: r.stats(self.shapes[name]) for name, r in self.running.items()},
            values={name: np.concatenate(v) for name, v in self.scalars.items()},
            finite=np.concatenate(self.finite),
            params=dict(zip(varied_names, params)),
            initial=concatenate(self.chunks["initial"]),
            final=concatenate(final) if final else None,
            trajectories=concatenate(traj) if traj else None,
            param_keys=np.asarray(param_keys)[:batch],
            state_keys=np.asarray(state_keys)[:batch],
        )


__all__ = ["Collector", "MonteCarloResult", "Stats", "concatenate"]
