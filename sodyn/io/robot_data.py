"""Finding the robots of the ``example-robot-data`` package (its wheel ships data only, no
Python module): :func:`example_robots` lists them, :func:`example_robot` finds one.

The data lie in ``<prefix>/share/example-robot-data/robots/<description>/…``; the wheel's
prefix is ``<site-packages>/cmeel.prefix``, a system or conda install's ``<prefix>`` is on
``AMENT_PREFIX_PATH``.  Every ``*.urdf`` there is a robot, named by its file stem (``solo12``,
``ur5_robot``); a stem shared by several descriptions is named ``<description>/<stem>``
for each of them.  A robot's SRDF is the one in its description's ``srdf/`` folder whose
stem equals the URDF's, else the longest SRDF stem that begins the URDF's (``solo`` for
``solo12``), else the only SRDF whose stem begins with the URDF's (``baxter_manipulation``
for ``baxter``).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import pathlib
import sys


@dataclasses.dataclass(frozen=True)
class ExampleRobot:
    """One robot of example-robot-data: ``urdf`` and ``srdf`` (``None`` when it has none)
    paths, and the ``package_dirs`` that resolve its ``package://`` meshes."""

    name: str
    urdf: pathlib.Path
    srdf: pathlib.Path | None
    package_dirs: tuple[pathlib.Path, ...]

    def load(self, **kwargs):
        """:func:`sodyn.load_urdf` of the robot with its SRDF and package directories
        (``kwargs`` go to :func:`sodyn.load_urdf`, e.g. ``floating_base=True``); SRDF pairs
        naming links the URDF lacks are left out with a warning unless
        ``srdf_unknown_links="error"`` is passed."""
        from sodyn.io.urdf import load_urdf

        kwargs.setdefault("srdf", self.srdf)
        kwargs.setdefault("package_dirs", self.package_dirs)
        kwargs.setdefault("srdf_unknown_links", "ignore")
        return load_urdf(self.urdf, **kwargs)


def _share_candidates() -> list[pathlib.Path]:
    out = []
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        out.append(pathlib.Path(distribution("example-robot-data").locate_file("cmeel.prefix/share")))
    except (ImportError, PackageNotFoundError):
        pass
    out += [pathlib.Path(p) / "cmeel.prefix" / "share" for p in sys.path if p]
    out += [pathlib.Path(p) / "share" for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return out


@functools.lru_cache(maxsize=1)
def example_robot_data_share() -> pathlib.Path | None:
    """The ``share`` directory holding ``example-robot-data/robots`` (first of: the installed
    wheel, ``cmeel.prefix/share`` beside ``sys.path`` entries, ``AMENT_PREFIX_PATH``
    prefixes), or ``None`` when example-robot-data is not installed."""
    for d in _share_candidates():
        if (d / "example-robot-data" / "robots").is_dir():
            return d
    return None


def _robots_dir() -> pathlib.Path:
    share = example_robot_data_share()
    if share is None:
        raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")
    return share / "example-robot-data" / "robots"


@functools.lru_cache(maxsize=1)
def _catalogue() -> dict[str, pathlib.Path]:
    """Robot name → URDF path (module docstring for the names)."""
    root = _robots_dir()
    urdfs = sorted(root.rglob("*.urdf"))
    stems: dict[str, int] = {}
    for u in urdfs:
        stems[u.stem] = stems.get(u.stem, 0) + 1
    return {u.stem if stems[u.stem] == 1 else f"{u.relative_to(root).parts[0]}/{u.stem}": u for u in urdfs}


def _srdf_for(urdf: pathlib.Path, root: pathlib.Path) -> pathlib.Path | None:
    folder = root / urdf.relative_to(root).parts[0] / "srdf"
    srdfs = sorted(folder.glob("*.srdf")) if folder.is_dir() else []
    exact = [s for s in srdfs if s.stem == urdf.stem]
    if exact:
        return exact[0]
    prefix = [s for s in srdfs if urdf.stem.startswith(s.stem)]
    if prefix:
        return max(prefix, key=lambda s: len(s.stem))
    longer = [s for s in srdfs if s.stem.startswith(urdf.stem)]
    return longer[0] if len(longer) == 1 else None


def example_robots() -> tuple[str, ...]:
    """The names of every robot (URDF) of example-robot-data, sorted; ``FileNotFoundError``
    when the package is not installed."""
    return tuple(sorted(_catalogue()))


def example_robot(name: str) -> ExampleRobot:
    """Find the example-robot-data robot ``name`` (a name of :func:`example_robots`,
    ``<description>/<stem>``, or the URDF's path below ``robots/``).  ``ValueError`` with
    the closest names for an unknown one; ``FileNotFoundError`` when the package is not
    installed."""
    root = _robots_dir()
    cat = _catalogue()
    urdf = cat.get(name)
    if urdf is None:
        by_path = {str(u.relative_to(root)): u for u in cat.values()}
        by_stem = {f"{u.relative_to(root).parts[0]}/{u.stem}": u for u in cat.values()}
        urdf = by_path.get(name) or by_stem.get(name)
    if urdf is None:
        close = difflib.get_close_matches(name, list(cat), n=6, cutoff=0.5)
        close += [n for n in cat if n.startswith(name) and n not in close]
        hint = f"; did you mean {', '.join(map(repr, close[:8]))}?" if close else ""
        raise ValueError(f"example-robot-data has no robot {name!r}{hint} (sodyn.example_robots() lists "
                         f"{len(cat)} robots)")
    key = next(k for k, u in cat.items() if u == urdf)
    return ExampleRobot(key, urdf, _srdf_for(urdf, root), (root.parent.parent,))


__all__ = ["ExampleRobot", "example_robot", "example_robot_data_share", "example_robots"]
