"""The models the ``sodyn`` command line names, and ``sodyn info MODEL``.

MODEL is a built-in model (:data:`BUILTINS`), a robot of example-robot-data, a ``.urdf`` or an
MJCF ``.xml`` file.  :func:`check_model_spec` checks it before JAX starts; :func:`load_model`
loads it, a malformed file becoming a one-line :class:`~sodyn.cli_outputs.CliError`;
:func:`info` prints a model's bodies, joints, frames, masses and ``q``/``v`` layout.
"""

from __future__ import annotations

import os

from sodyn import cli_stand
from sodyn.cli_outputs import CliError

BUILTINS = ("pendulum_chain", "double_pendulum", "cart_pole", "cdi_satellite", "humanoid_like")
DEFAULT_MODEL = "pendulum_chain"


def is_example_robot(spec: str) -> bool:
    """Whether ``spec`` names a robot of example-robot-data (when it is installed)."""
    if spec.endswith((".urdf", ".xml")) or spec in BUILTINS:
        return False
    try:
        from sodyn.io.robot_data import example_robot

        example_robot(spec)
    except (ValueError, FileNotFoundError):
        return False
    return True


def from_urdf(spec: str) -> bool:
    """Whether ``spec`` is loaded from a URDF file (a ``.urdf`` or an example-robot-data robot)."""
    return spec.endswith(".urdf") or is_example_robot(spec)


def check_model_spec(spec: str) -> None:
    """Raise :class:`CliError` unless ``spec`` is a built-in, an example robot or a readable model file."""
    if spec in BUILTINS or is_example_robot(spec):
        return
    if spec.endswith((".urdf", ".xml")):
        if not os.path.isfile(spec):
            raise CliError(f"model file {spec!r} not found")
        if not os.access(spec, os.R_OK):
            raise CliError(f"model file {spec!r} is not readable")
        return
    raise CliError(f"unknown model {spec!r}: use one of {', '.join(BUILTINS)}, a robot of example-robot-data "
                   "(sodyn.example_robots()), a .urdf or an MJCF .xml file")


def load_model(spec: str, floating_base: bool):
    """The model ``spec`` names (a built-in, a URDF or an MJCF file); file errors as :class:`CliError`."""
    check_model_spec(spec)
    import sodyn as sd
    from sodyn import models

    if spec in BUILTINS:
        return getattr(models, spec)()
    try:
        if is_example_robot(spec):   # its SRDF's poses become keyframes (--stand)
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sd.IgnoredElementWarning)
                return sd.example_robot(spec).load(floating_base=floating_base)
        if spec.endswith(".urdf"):
            return sd.load_urdf(spec, floating_base=floating_base)
        return sd.load_mjcf(spec)
    except ImportError as e:
        raise CliError(f"cannot load {spec!r}: {e}") from None
    except (ValueError, TypeError, KeyError, OSError, SyntaxError) as e:  # malformed files
        message = " ".join(str(e).split()) or type(e).__name__
        raise CliError(message if spec in message else f"cannot load {spec!r}: {message}") from None


def info(args) -> int:
    """``sodyn info``: print the model's bodies, joints, frames, masses and q/v layout; exit status 0."""
    import numpy as np

    model = load_model(args.model, args.floating_base)
    hint = cli_stand.fixed_base_hint(model, from_urdf(args.model), args.floating_base)
    if hint:
        print(hint)
    mass = np.asarray(model.mass, np.float64)
    if not np.all(np.isfinite(mass)) or not np.isfinite(mass.sum()):
        raise CliError(f"{args.model}: the total mass overflows {model.mass.dtype} ({mass.sum():g} kg); "
                       "check the model's masses")
    parent = np.asarray(model.parent)
    print(repr(model))
    gravity = ", ".join(f"{x:g}" for x in np.asarray(model.gravity, np.float64))
    print(f"total mass {mass.sum():.4g} kg, gravity ({gravity}) m/s^2, {len(model.geoms)} geoms, "
          f"{len(model.actuators.names) if hasattr(model.actuators, 'names') else 0} actuators")
    print(f"bodies and joints ({model.n_bodies}):")
    width = max(len(n) for n in (*model.body_names, *model.joint_names, "world"))
    print(f"  {'#':>3s}  {'body':{width}s}  {'parent':{width}s}  {'joint':{width}s}  {'type':9s}  "
          f"{'q':>7s}  {'v':>7s}  {'mass [kg]':>10s}")
    for k in range(model.n_bodies):
        qs, vs = model.joint_q_slice(k), model.joint_v_slice(k)
        p = model.body_names[parent[k]] if parent[k] >= 0 else "world"
        q_text = f"{qs.start}:{qs.stop}" if qs.stop > qs.start else "-"
        v_text = f"{vs.start}:{vs.stop}" if vs.stop > vs.start else "-"
        print(f"  {k:3d}  {model.body_names[k]:{width}s}  {p:{width}s}  {model.joint_names[k]:{width}s}  "
              f"{model.joint_types[k]:9s}  {q_text:>7s}  {v_text:>7s}  {mass[k]:10.4g}")
    print(f"frames ({model.n_frames}):")
    fwidth = max((len(n) for n in model.frame_names), default=5)
    translation = np.asarray(model.frame_translation, np.float64)
    for f, name in enumerate(model.frame_names):
        b = model.frame_body[f]
        on = model.body_names[b] if b >= 0 else "world"
        xyz = ", ".join(f"{x:.4g}" for x in translation[f])
        print(f"  {f:3d}  {name:{fwidth}s}  on {on:{width}s}  at ({xyz})")
    print(f"q layout: nq = {model.nq}, v layout: nv = {model.nv}")
    return 0


__all__ = ["BUILTINS", "DEFAULT_MODEL", "check_model_spec", "from_urdf", "info", "is_example_robot", "load_model"]
