"""The host loop of :func:`sodyn.monte_carlo`: one compiled program run chunk after chunk, each
finished chunk kept in a store (when one is given) and folded into the result.

:func:`run_chunks` traces the batched rollout once; it compiles it only when some chunk is not
already in the store, as a progress phase of its own (:mod:`sodyn.simulate.progress`), so the
bar's rate and estimate count running chunks only.  Chunks are visited in order: a stored chunk
is loaded, a missing one is computed and then written (:mod:`sodyn.simulate.store`), and both
go through the same :class:`~sodyn.simulate.results.Collector`, so an interrupted run resumed
from its store gives the uninterrupted run's result bit for bit.

On ``KeyboardInterrupt`` (Ctrl-C) or any other exception the chunks already written stay on
disk (a chunk being written is either complete or absent) and the exception propagates: the
call does not return a partial result, ``resume=True`` continues it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sodyn.simulate.progress import RunProgress
from sodyn.simulate.results import Collector
from sodyn.simulate.store import ChunkStore


def run_chunks(run: Any, chunk_args: Callable[[slice], tuple], first: tuple, *, batch: int, chunk: int,
               progress: bool, store: str | os.PathLike | None, resume: bool, identity: dict) -> Collector:
    """Run ``run`` (a ``jax.jit`` function) on ``chunk_args(slice of chunk c)`` for every chunk of
    ``batch`` samples (the last one padded by the caller; ``first`` are chunk 0's arguments) and
    fold the real samples of each into a :class:`Collector`.  With ``store``, finished chunks are
    written there as they finish and, with ``resume``, chunks already there are loaded instead
    of run; ``identity`` (plus the outputs' names, dtypes and shapes) is the run's manifest."""
    n_chunks = -(-batch // chunk)
    lowered = run.lower(*first)  # one trace: the outputs' structure, before anything runs
    path_leaves, treedef = jax.tree_util.tree_flatten_with_path(lowered.out_info)
    names = [jax.tree_util.keystr(path, simple=True, separator=".") for path, _ in path_leaves]
    sizes = [min(chunk, batch - c * chunk) for c in range(n_chunks)]
    saved = None
    if store is not None:
        identity = {**identity, "summary": sorted(lowered.out_info["summary"]),
                    "outputs": {n: [str(x.dtype), list(x.shape[1:])] for n, (_, x) in zip(names, path_leaves)}}
        saved = ChunkStore.open(store, identity, names, resume=resume)
    todo = [c for c in range(n_chunks) if saved is None or not saved.has(c)]
    bar = RunProgress(batch, n_chunks, enabled=progress)
    collector = Collector()
    try:
        compiled = None
        if todo:
            with bar.compiling():
                compiled = lowered.compile()
        bar.open(done=batch - sum(sizes[c] for c in todo))
        for c, real in enumerate(sizes):
            if saved is not None and c not in todo:
                leaves = saved.load(c, real)
            else:
                with bar.chunk(c):
                    out = jax.device_get(compiled(*chunk_args(slice(c * chunk, (c + 1) * chunk))))
                leaves = [np.asarray(x)[:real] for x in treedef.flatten_up_to(out)]
                if saved is not None:
                    saved.save(c, leaves)
                bar.update(real)
            collector.add(jax.tree_util.tree_unflatten(treedef, leaves), real)
    finally:
        bar.close()
    return collector


__all__ = ["run_chunks"]
