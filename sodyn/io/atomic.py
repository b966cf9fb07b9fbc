"""Atomic file writes: a file sodyn writes is either the old one or the complete new one.

:func:`atomic_path` yields a temporary path in the destination's folder (same suffix, so writers
that pick a format from the name, ``fig.savefig`` or ``np.savez``, behave as for the real name).
When the ``with`` block ends normally the temporary is flushed to disk (``os.fsync``) and
``os.replace``-d onto the destination, an atomic rename on POSIX and Windows; the folder is
fsync-ed too where the platform allows, so the rename itself survives a power cut.  When the
block raises (a full disk, ``KeyboardInterrupt``) the temporary is removed and the destination
is left as it was.  The temporary lives in the same folder because ``os.replace`` is only atomic
within one file system.

Every file sodyn writes goes through here: the ``sodyn simulate`` outputs (``--out``,
``--plot``, ``--gif``) and the chunks and manifest of a Monte Carlo store
(:mod:`sodyn.simulate.store`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator

#: The temporary's name starts with this (after a dot, so it is hidden), e.g. ``.run.npz.tmp-x1y2.npz``.
TEMP_MARK = ".tmp-"


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: str) -> None:
    """Flush the folder entry of a rename (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path_for(path: str | os.PathLike) -> str:
    """A new, empty temporary file next to ``path`` with ``path``'s suffix; returns its name.  It is
    created with the permissions a new file gets (``0o666`` less the umask), as ``open`` would."""
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    suffix = os.path.splitext(name)[1]
    for _ in range(100):
        temp = os.path.join(directory, f".{name}{TEMP_MARK}{secrets.token_hex(4)}{suffix}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return temp
    raise FileExistsError(f"no free temporary name next to {path!r}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """``with atomic_path("run.npz") as tmp: np.savez(tmp, ...)``: write to ``tmp``, then the
    complete file replaces ``path`` in one step (module doc).  On any exception, ``KeyboardInterrupt``
    included, the temporary is removed, ``path`` is untouched and the exception propagates."""
    path = os.fspath(path)
    temp = temp_path_for(path)
    try:
        yield temp
        _fsync_file(temp)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", **open_kwargs) -> Iterator:
    """``with atomic_open("manifest.json", "w") as f: f.write(...)``: :func:`atomic_path` with the
    temporary opened as a file object (flushed before it is synced and renamed)."""
    if not mode.startswith("w"):
        raise ValueError(f"atomic_open: mode must be a write mode ('w', 'wb', ...), got {mode!r}")
    with atomic_path(path) as temp, open(temp, mode, **open_kwargs) as f:
        yield f
        f.flush()


__all__ = ["TEMP_MARK", "atomic_open", "atomic_path", "temp_path_for"]
