"""The files ``sodyn simulate`` writes (``--out``, ``--plot``, ``--gif``): the checks made before
the run, atomic writes, and the folder that keeps an ``--out`` run's finished chunks; and
printing that outlives a closed stdout pipe (:func:`say`, :func:`quiet_stdout`).

* Before the run (exit status 2 on a problem, nothing simulated): each file's name and folder,
  that the folder takes a new file, and that an existing file is only replaced with ``--force``;
  that ``FILE.npz.parts/`` (:data:`PARTS_SUFFIX`) holding an interrupted run is continued with
  ``--resume`` or started over with ``--force``, never silently overwritten.
* Each file is written to a temporary in its folder and renamed into place
  (:func:`sodyn.io.atomic.atomic_path`); a failed write (a full disk) leaves the previous file as
  it was and becomes a one-line :class:`WriteError` (exit status 1).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

#: The folder next to ``--out FILE`` that keeps the run's finished chunks until ``FILE`` is written.
PARTS_SUFFIX = ".parts"


class CliError(Exception):
    """A bad argument or file: reported as one line on stderr, exit status 2."""


class WriteError(Exception):
    """An output file that could not be written (e.g. a full disk): one line on stderr, exit status 1."""


def check_writable(path: str | None, option: str, suffixes: tuple[str, ...], force: bool = False) -> None:
    """That ``path`` can be written, before the run: a :class:`CliError` otherwise.  Files are
    written atomically (a temporary in the same folder, then renamed), so the folder must take a
    new file; an existing ``path`` is only replaced with ``force``."""
    if path is None:
        return
    if not path.lower().endswith(suffixes):
        raise CliError(f"{option} {path!r}: the file name must end with {' or '.join(suffixes)}")
    if os.path.isdir(path):
        raise CliError(f"{option} {path!r} is a directory")
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise CliError(f"{option} {path!r}: directory {directory!r} does not exist")
    if os.path.exists(path) and not force:
        raise CliError(f"{option} {path!r} already exists: --force replaces it")
    try:
        fd, probe = tempfile.mkstemp(prefix=".sodyn-probe-", dir=directory)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise CliError(f"{option} {path!r} is not writable: {e.strerror or e}") from None


def check_parts(args) -> None:
    """``--resume`` and the ``--out`` chunk folder (:data:`PARTS_SUFFIX`), before the run."""
    if args.out is None:
        if args.resume:
            raise CliError("--resume continues an interrupted run of --out FILE.npz: give the same --out")
        return
    parts = args.out + PARTS_SUFFIX
    if os.path.exists(parts) and not os.path.isdir(parts):
        raise CliError(f"--out {args.out!r}: {parts!r} (its chunk folder) is a file")
    if os.path.isdir(parts) and os.listdir(parts):
        if not os.path.isfile(os.path.join(parts, "manifest.json")):
            raise CliError(f"--out {args.out!r}: {parts!r} (its chunk folder) holds other files; move them away")
        if not (args.resume or args.force):
            raise CliError(f"--out {args.out!r}: {parts!r} holds an interrupted run: --resume continues it, "
                           "--force starts over")


def write(path: str, option: str, writer: Callable[[str], None], parts: str | None = None) -> None:
    """``writer(temporary path)``, then the file replaces ``path`` atomically; an ``OSError``
    becomes a one-line :class:`WriteError` (the previous ``path``, if any, is left as it was)."""
    from sodyn.io.atomic import atomic_path

    try:
        with atomic_path(path) as temp:
            writer(temp)
    except OSError as e:
        kept = "; the previous file is unchanged" if os.path.exists(path) else ""
        kept += f"; the finished chunks stay in {parts!r} (--resume writes it again)" if parts else ""
        raise WriteError(f"cannot write {option} {path!r}: {e.strerror or e}{kept}") from None


def save_npz(args, model, result, rule: str, path: str) -> None:
    """The ``--out`` file at ``path``: the run's options, finite flags, initial and final states,
    statistics (``NAME_mean``, ...), per-sample values and sampled parameters (``param_PATH``);
    for a model with sensors, the statistics of their readings over the samples at every step
    (``sensors_mean``, ``sensors_std``, ``sensors_min``, ``sensors_max``, each ``(steps,
    total_dim)``) with ``sensor_names``, ``sensor_kinds`` and each sensor's ``sensor_adr`` and
    ``sensor_dim`` in a row of readings (MuJoCo's ``sensordata`` layout)."""
    import numpy as np

    data = {
        "model": np.asarray(model.name), "dt": np.asarray(args.dt), "steps": np.asarray(args.steps),
        "batch": np.asarray(args.batch), "seed": np.asarray(args.seed), "integrator": np.asarray(args.integrator),
        "contact": np.asarray(rule), "randomize": np.asarray(args.randomize),
        "finite": result.finite,
        "initial_q": result.initial.q, "initial_v": result.initial.v,
        "final_q": result.final.q, "final_v": result.final.v,
    }
    for name, s in result.stats.items():
        for field in ("mean", "std", "min", "max"):
            data[f"{name}_{field}"] = np.asarray(getattr(s, field))
    for name, x in result.values.items():
        data.setdefault(name, x)
    for name, x in result.params.items():
        data[f"param_{name}"] = x
    if "sensors" in result.stats:
        sensors = model.sensors
        data.update(sensor_names=np.asarray(sensors.names), sensor_kinds=np.asarray(sensors.kind),
                    sensor_adr=np.asarray(sensors.adr), sensor_dim=np.asarray(sensors.dim))
    np.savez_compressed(path, **data)



def say(text: str = "") -> None:
    """``print`` to stdout that outlives a closed pipe (``sodyn simulate | head -3`` still writes
    its ``--out``, ``--plot`` and ``--gif`` files)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        quiet_stdout()


def quiet_stdout() -> None:
    """After a closed pipe (``sodyn info | head -1``): send the rest of stdout to /dev/null so the
    interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (e.g. captured)
        pass


__all__ = ["PARTS_SUFFIX", "CliError", "WriteError", "check_parts", "check_writable", "quiet_stdout", "save_npz",
           "say", "write"]
