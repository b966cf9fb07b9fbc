"""``sodyn view MODEL``: look at a model, a trajectory or Monte Carlo samples, with its meshes.

MODEL is a built-in model, a ``.urdf`` or MJCF ``.xml`` file, or the name of an
example-robot-data robot (:func:`sodyn.example_robots` lists them).  What is shown:

* a pose: the keyframe ``--keyframe``, else the model's neutral configuration, a floating base
  lowered or raised so that the lowest vertex touches the ground (:func:`sodyn.viewer.on_ground`);
* ``--traj FILE.npz``: a trajectory ``qs`` (or ``q``) of shape ``(T, nq)`` with its step ``dt``
  if the file has one, or the samples ``final_q`` (else ``initial_q``) ``(S, nq)`` of a
  ``sodyn simulate --out`` file.

Where: the interactive view in a browser (:func:`sodyn.viewer.show`, serving until Ctrl-C)
unless ``--png``, ``--gif`` or ``--mp4`` is given: a still (a pose; the samples overlaid; eight
poses of a trajectory overlaid, the last opaque), or an animation of the trajectory.  Every
file is written atomically and an existing one is only replaced with ``--force``.  The meshes
are the model file's visuals (:func:`sodyn.io.visuals.load_visuals`), else its collision
geoms, else a skeleton; ``--sticks`` draws the stick figure of :mod:`sodyn.viewer.sticks`.

The helpers :func:`simulate_panel` and :func:`simulate_animation` let ``sodyn simulate``'s
``--plot`` and ``--gif`` draw the meshes of a model file that has visual shapes.
"""

from __future__ import annotations

import argparse
import os

from sodyn.cli_outputs import CliError, check_writable, write

IMAGE_FORMATS = (".png", ".jpg", ".jpeg")


def resolve(spec: str, floating_base: bool):
    """``(model, visuals source or None)`` of a built-in name, a URDF/MJCF path or an
    example-robot-data name; problems as :class:`CliError`."""
    import sodyn as sd
    from sodyn import cli_models, models

    if spec in cli_models.BUILTINS:
        return getattr(models, spec)(), None
    if spec.endswith((".urdf", ".xml")):
        return cli_models.load_model(spec, floating_base), spec
    try:
        robot = sd.example_robot(spec)
    except (ValueError, FileNotFoundError) as e:
        raise CliError(f"unknown model {spec!r}: not a built-in ({', '.join(cli_models.BUILTINS)}), a .urdf or .xml "
                       f"file, or an example-robot-data robot ({' '.join(str(e).split())})") from None
    return robot.load(floating_base=floating_base), robot


def visuals_for(source):
    """The visual shapes of a model file (``None`` for a built-in or a file without any);
    unreadable meshes become a :class:`CliError`."""
    if source is None:
        return None
    from sodyn.io.visuals import load_visuals

    try:
        visuals = load_visuals(source)
    except (OSError, ValueError, TypeError) as e:
        raise CliError(f"cannot read the visual shapes of {source}: {' '.join(str(e).split())}") from None
    return visuals or None


def home_q(model, keyframe: str | None = None):
    """The pose shown without a trajectory: the keyframe, else the neutral configuration (the
    caller puts a floating base on the ground, :func:`sodyn.viewer.on_ground`)."""
    import numpy as np

    if keyframe is None:
        return np.asarray(model.q_neutral, np.float64)
    if keyframe not in model.keyframes.names:
        raise CliError(f"--keyframe {keyframe!r}: the model's keyframes are {list(model.keyframes.names)}")
    return np.asarray(model.keyframes[keyframe][0], np.float64)


def read_traj(path: str, model):
    """``(qs (T, nq) or None, samples (S, nq) or None, dt or None)`` from ``--traj FILE.npz``."""
    import numpy as np

    if not os.path.isfile(path):
        raise CliError(f"--traj {path!r} not found")
    try:
        data = np.load(path)
    except (OSError, ValueError) as e:
        raise CliError(f"--traj {path!r} cannot be read: {e}") from None
    dt = float(data["dt"]) if "dt" in data else None
    for key, kind in (("qs", "traj"), ("q", "traj"), ("final_q", "samples"), ("initial_q", "samples")):
        if key in data:
            x = np.asarray(data[key], np.float64)
            if x.ndim != 2 or x.shape[1] != model.nq:
                raise CliError(f"--traj {path!r}: {key} has shape {x.shape}, expected (N, {model.nq}) for "
                               f"{model.name!r}")
            x = x[np.all(np.isfinite(x), axis=1)]
            if len(x) == 0:
                raise CliError(f"--traj {path!r}: {key} has no finite row")
            return (x, None, dt) if kind == "traj" else (None, x, dt)
    raise CliError(f"--traj {path!r} holds none of qs, q, final_q, initial_q (it has {sorted(data)})")


def _file_visuals(spec: str):
    return visuals_for(spec if spec.endswith((".urdf", ".xml")) else None)


def simulate_panel(fig, position: tuple[int, int, int], args, model, result, ground) -> bool:
    """``sodyn simulate --plot``'s pose panel with meshes: the final poses of up to 32 finite
    samples overlaid (:func:`sodyn.viewer.render_samples`, sample 0 opaque) on the subplot
    ``position`` of ``fig``.  ``False`` (nothing drawn) for a model file without visual shapes,
    or a built-in model."""
    import numpy as np

    from sodyn import viewer

    visuals = _file_visuals(args.model)
    qs = np.asarray(result.final.q)
    qs = qs[np.all(np.isfinite(qs), axis=1)]
    if visuals is None or len(qs) == 0:
        return False
    ax = fig.add_subplot(*position)
    image = viewer.render_samples(viewer.scene_for(model, visuals), qs, highlight=0, ground=ground, size=(720, 640),
                                  max_samples=32)
    ax.imshow(image)
    ax.set_axis_off()
    ax.set_title(f"{min(len(qs), 32)} samples at t = {args.dt * args.steps:g} s (sample 0 opaque)")
    return True


def simulate_animation(args, model, qs, contact, force, ground, path: str) -> bool:
    """``sodyn simulate --gif`` with meshes: the trajectory ``qs`` of sample 0 with the contact
    forces ``force (T - 1, nc, 3)`` of a :class:`~sodyn.simulate.GroundContact` drawn as
    arrows (``force[k]`` acts at ``qs[k]``).  ``False`` (nothing written) for a model file
    without visual shapes, or a built-in model."""
    import numpy as np

    import sodyn as sd
    from sodyn import viewer

    visuals = _file_visuals(args.model)
    if visuals is None:
        return False
    arrows = None
    if isinstance(contact, sd.GroundContact) and force is not None:
        force = np.concatenate([np.asarray(force), np.zeros_like(np.asarray(force[:1]))])[: len(qs)]
        arrows = viewer.contact_arrows(model, contact, qs, force)
    viewer.save_animation(model, qs, path, visuals=visuals, dt=args.dt, max_frames=100, title=model.name,
                          ground=ground, forces=arrows)
    return True


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, e.g. 800x640, got {text!r}") from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise argparse.ArgumentTypeError(f"sides must be in [16, 8192] pixels, got {text!r}")
    return w, h


def add_parser(sub, model_help: str) -> None:
    """Register ``sodyn view`` on the argparse sub-parsers ``sub``."""
    view = sub.add_parser("view", help="look at a model (its meshes), a trajectory or samples: browser, PNG, GIF, MP4",
                          description="Show a model with its visual meshes: interactive in a browser (viser), or "
                                      "written to --png, --gif or --mp4.")
    view.add_argument("model", metavar="MODEL", help=model_help + ", or an example-robot-data robot name")
    view.add_argument("--floating-base", action="store_true", help="URDF: add a free joint at the root")
    view.add_argument("--keyframe", help="show this keyframe (SRDF group state or MJCF key)")
    view.add_argument("--traj", metavar="FILE.npz", help="a trajectory qs (T, nq) [and dt], or the final_q samples of "
                                                         "a sodyn simulate --out file")
    view.add_argument("--dt", type=float, help="time step of the trajectory [s] (default: the file's dt)")
    view.add_argument("--png", metavar="FILE.png", help="write a still image")
    view.add_argument("--gif", metavar="FILE.gif", help="write an animation of the trajectory")
    view.add_argument("--mp4", metavar="FILE.mp4", help="write an animation of the trajectory (needs imageio-ffmpeg)")
    view.add_argument("--size", type=_size, default=None, help="image size WIDTHxHEIGHT (default 800x640 stills, "
                                                               "640x640 animations)")
    view.add_argument("--azimuth", type=float, default=35.0, help="camera azimuth [deg]")
    view.add_argument("--elevation", type=float, default=18.0, help="camera elevation [deg]")
    view.add_argument("--max-frames", type=int, default=200, help="most frames of an animation")
    view.add_argument("--sticks", action="store_true", help="draw the stick figure instead of meshes")
    view.add_argument("--host", default="127.0.0.1", help="interactive view: address to serve on")
    view.add_argument("--port", type=int, default=8080, help="interactive view: port")
    view.add_argument("--force", action="store_true", help="replace existing output files")


def run(args) -> int:
    """``sodyn view`` (module docstring); returns the exit status."""
    check_writable(args.png, "--png", IMAGE_FORMATS, args.force)
    check_writable(args.gif, "--gif", (".gif",), args.force)
    check_writable(args.mp4, "--mp4", (".mp4",), args.force)
    if args.max_frames < 1:
        raise CliError(f"--max-frames must be positive, got {args.max_frames}")
    from sodyn import viewer

    model, source = resolve(args.model, args.floating_base)
    qs, samples, dt = read_traj(args.traj, model) if args.traj else (None, None, None)
    dt = args.dt if args.dt is not None else dt
    if (args.gif or args.mp4) and qs is None:
        raise CliError("--gif and --mp4 animate a trajectory: give --traj FILE.npz holding qs (T, nq)")
    camera = viewer.Camera(azimuth=args.azimuth, elevation=args.elevation)
    outputs = [p for p in (args.png, args.gif, args.mp4) if p]
    scene = None if args.sticks else viewer.scene_for(model, visuals_for(source))
    if qs is None and samples is None:
        q = home_q(model, args.keyframe)
        qs = (q if scene is None else viewer.on_ground(scene, q))[None]
    if not outputs:
        if scene is None:
            raise CliError("--sticks draws files only: give --png or --gif")
        viewer.show(scene, qs, samples=samples, dt=dt, host=args.host, port=args.port, block=True)
        return 0
    if args.png:
        write(args.png, "--png", lambda temp: _still(args, model, scene, qs, samples, camera, temp))
        print(f"wrote {args.png}")
    for path, option in ((args.gif, "--gif"), (args.mp4, "--mp4")):
        if path:
            if scene is None:
                if option == "--mp4":
                    raise CliError("--sticks writes GIFs only")
                write(path, option, lambda temp: viewer.animate(model, qs, temp, dt=dt, max_frames=args.max_frames))
            else:
                write(path, option, lambda temp: viewer.save_animation(
                    scene, qs, temp, dt=dt, camera=camera, max_frames=args.max_frames, title=model.name,
                    **({"size": args.size} if args.size else {})))
            print(f"wrote {path}")
    return 0


def _still(args, model, scene, qs, samples, camera, path: str) -> None:
    import numpy as np

    from sodyn import viewer

    size = args.size or viewer.IMAGE_SIZE
    if scene is None:
        ax = viewer.new_axes((size[0] / 100, size[1] / 100), 100)
        viewer.draw_pose(model, (qs if qs is not None else samples)[-1], ax, title=model.name)
        ax.figure.savefig(path)
        return
    if samples is not None:
        image = viewer.render_samples(scene, samples, camera=camera, size=size, title=f"{model.name}: {len(samples)} "
                                                                                      "samples")
    elif len(qs) == 1:
        image = viewer.render(scene, qs[0], camera=camera, size=size, title=model.name)
    else:
        idx = np.unique(np.linspace(0, len(qs) - 1, 8).astype(int))[::-1]
        image = viewer.render_samples(scene, qs[idx], camera=camera, size=size, highlight=0, alpha=0.35,
                                      title=f"{model.name}: {len(idx)} poses of the trajectory")
    viewer.save_image(path, image)


__all__ = ["IMAGE_FORMATS", "add_parser", "home_q", "read_traj", "resolve", "run", "simulate_animation",
           "simulate_panel", "visuals_for"]
