"""A folder that keeps a :func:`sodyn.monte_carlo` run's chunks as they finish, so an interrupted
run loses nothing and ``resume=True`` runs only the chunks that are missing.

Layout of ``monte_carlo(..., store="run.parts")``::

    run.parts/manifest.json     the run's identity (below), written once, before the first chunk
    run.parts/chunk_00000.npz   chunk 0's results: one array per output leaf, its real samples only
    run.parts/chunk_00001.npz   ...

Why one ``.npz`` per chunk and a JSON manifest:

* **no new dependency**: NumPy and the standard library read and write both (HDF5 or zarr would
  add a package for what a folder of files does);
* **each chunk is written atomically and is self-contained** (:mod:`sodyn.io.atomic`: a
  temporary in the folder, fsync, rename): a chunk file exists completely or not at all, so
  Ctrl-C, a crash or a full disk at any moment leaves only whole chunks, and a chunk is done
  exactly when its file exists (no index to keep in step).  Each file names its arrays (``summary.energy``,
  ``initial.q``, ``params.0``, ...) and carries the run's id, so a stray file from another run is
  refused rather than mixed in;
* **the manifest records the run's identity**: the model's name, a SHA-256 of every nominal
  parameter array (the model's and the rollout keyword arguments', e.g. a contact model) and of
  the controls, ``batch``, ``chunk``, ``steps``, ``dt``, the key, ``keep``, the summary's
  quantities, the randomized parameters and each output's dtype and per-sample shape.  Resuming
  with a call that differs in any of them raises :class:`StoreMismatchError` naming what differs.
  Functions (``sample_params``, ``sample_state``, a policy, ``summary``) cannot be compared by
  value: resuming with different functions but the same identity is the caller's mistake.

Chunk ``c`` holds samples ``c·chunk`` to ``min((c+1)·chunk, batch)`` exactly as the uninterrupted
run computes them, and :class:`~sodyn.simulate.results.Collector` folds loaded and computed
chunks alike, so a resumed run's result equals the uninterrupted run's bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from sodyn.io.atomic import TEMP_MARK, atomic_open, atomic_path

FORMAT = "sodyn.monte_carlo store 1"
MANIFEST = "manifest.json"


class StoreMismatchError(ValueError):
    """A store's manifest does not match the call that would resume it."""


def parameters_hash(*trees: Any) -> str:
    """SHA-256 over every array leaf of ``trees`` (shape, dtype and bytes, in tree order)."""
    h = hashlib.sha256()
    for tree in trees:
        for leaf in jax.tree_util.tree_leaves(tree):
            x = np.asarray(leaf)
            h.update(f"{x.dtype.str}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def chunk_name(c: int) -> str:
    return f"chunk_{c:05d}.npz"


def read_manifest(path: str | os.PathLike) -> dict | None:
    """The manifest of the store at ``path``, ``None`` when there is none."""
    file = os.path.join(os.fspath(path), MANIFEST)
    if not os.path.isfile(file):
        return None
    try:
        with open(file, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise StoreMismatchError(f"store {os.fspath(path)!r}: cannot read {MANIFEST}: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise StoreMismatchError(f"store {os.fspath(path)!r}: {MANIFEST} is not a sodyn Monte Carlo store "
                                 f"(format {manifest.get('format') if isinstance(manifest, dict) else None!r})")
    return manifest


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _differences(stored: Any, given: Any, where: str = "") -> list[str]:
    """``"name: the store has X, this call Y"`` for each entry that differs (nested dicts by key)."""
    if isinstance(stored, dict) and isinstance(given, dict):
        out = []
        for k in [*given, *(k for k in stored if k not in given)]:
            name = f"{where}.{k}" if where else str(k)
            if k not in stored:
                out.append(f"{name}: the store has none, this call {_short(given[k])}")
            elif k not in given:
                out.append(f"{name}: the store has {_short(stored[k])}, this call none")
            else:
                out += _differences(stored[k], given[k], name)
        return out
    return [] if stored == given else [f"{where}: the store has {_short(stored)}, this call {_short(given)}"]


class ChunkStore:
    """The chunk files of one run in the folder ``path`` (module doc); made by :meth:`open`."""

    def __init__(self, path: str, identity: dict, names: Sequence[str]):
        self.path, self.identity, self.names = path, identity, list(names)
        text = json.dumps(identity, sort_keys=True)
        self.run_id = hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def open(cls, path: str | os.PathLike, identity: dict, names: Sequence[str], *, resume: bool) -> ChunkStore:
        """The store at ``path`` for a run of ``identity`` whose chunks hold the arrays ``names``.

        A new or empty folder gets the manifest.  A folder that holds a run is continued with
        ``resume=True`` when its manifest matches (else :class:`StoreMismatchError` naming the
        fields that differ) and refused with ``resume=False`` (``FileExistsError``: nothing is
        overwritten)."""
        path = os.fspath(path)
        if os.path.exists(path) and not os.path.isdir(path):
            raise NotADirectoryError(f"store {path!r} is a file, not a folder")
        os.makedirs(path, exist_ok=True)
        identity = json.loads(json.dumps({"format": FORMAT, **identity}))  # as it reads back from the manifest
        store = cls(path, identity, names)
        manifest = read_manifest(path)
        if manifest is None:
            stray = [f for f in os.listdir(path) if f.startswith("chunk_") and f.endswith(".npz")]
            if stray:
                raise StoreMismatchError(f"store {path!r} holds chunk files ({stray[0]}, ...) but no {MANIFEST}: "
                                         "use an empty folder")
            with atomic_open(os.path.join(path, MANIFEST), "w", encoding="utf-8") as f:
                json.dump(identity, f, indent=1)
            return store
        if not resume:
            raise FileExistsError(f"store {path!r} already holds a run ({len(store.finished())} chunk(s) done): "
                                  "pass resume=True to continue it, or use another folder")
        differ = _differences(manifest, identity)
        if differ:
            raise StoreMismatchError(f"store {path!r} holds a different run; " + "; ".join(differ))
        return store

    def chunk_path(self, c: int) -> str:
        return os.path.join(self.path, chunk_name(c))

    def has(self, c: int) -> bool:
        """Whether chunk ``c`` is done (its file exists: files are only ever complete)."""
        return os.path.isfile(self.chunk_path(c))

    def finished(self) -> list[int]:
        """The numbers of the finished chunks, in order."""
        out = []
        for f in os.listdir(self.path):
            if f.startswith("chunk_") and f.endswith(".npz") and TEMP_MARK not in f:
                stem = f[len("chunk_"):-len(".npz")]
                if stem.isdigit():
                    out.append(int(stem))
        return sorted(out)

    def save(self, c: int, leaves: Sequence[np.ndarray]) -> None:
        """Write chunk ``c``'s arrays (in the order of ``names``) atomically."""
        if len(leaves) != len(self.names):
            raise ValueError(f"chunk {c}: {len(leaves)} arrays for {len(self.names)} names")
        data = dict(zip(self.names, (np.asarray(x) for x in leaves)))
        with atomic_path(self.chunk_path(c)) as temp:
            np.savez(temp, __run__=np.asarray(self.run_id), __chunk__=np.asarray(c), **data)

    def load(self, c: int, real: int) -> list[np.ndarray]:
        """Chunk ``c``'s arrays (in the order of ``names``), each with ``real`` samples."""
        file = self.chunk_path(c)
        try:
            with np.load(file, allow_pickle=False) as data:
                run, number = str(data["__run__"]), int(data["__chunk__"])
                missing = [n for n in self.names if n not in data.files]
                leaves = [] if missing else [data[n] for n in self.names]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
            raise StoreMismatchError(f"chunk file {file!r} is unreadable ({e}); delete it to run that chunk again") \
                from None
        if run != self.run_id or number != c:
            raise StoreMismatchError(f"chunk file {file!r} belongs to another run (run {run}, chunk {number}; "
                                     f"this store: run {self.run_id}, chunk {c})")
        if missing or any(x.shape[:1] != (real,) for x in leaves):
            raise StoreMismatchError(f"chunk file {file!r} does not hold {real} samples of {', '.join(self.names)}")
        return leaves


__all__ = ["FORMAT", "MANIFEST", "ChunkStore", "StoreMismatchError", "chunk_name", "parameters_hash",
           "read_manifest"]
