"""The ``sodyn`` command line (also ``python -m sodyn``).

``sodyn simulate [MODEL]`` runs a batched Monte Carlo simulation (:func:`sodyn.monte_carlo`) of a
built-in model or a URDF/MJCF file and prints a summary (:mod:`sodyn.cli_simulate`); ``sodyn info
[MODEL]`` describes a model (:mod:`sodyn.cli_models`); ``sodyn view MODEL`` shows it with its
meshes (:mod:`sodyn.cli_view`).  This module parses the arguments and runs the command.

Every bad argument or file gets one line on stderr and exit status 2, checked before any
simulation starts (an existing ``--out``, ``--plot`` or ``--gif`` file is one, unless ``--force``);
an unexpected failure gets one line and exit status 1 (``SODYN_TRACEBACK=1`` shows the traceback).

Nothing is lost: every file is written atomically (:mod:`sodyn.io.atomic`: a failed write, e.g. a
full disk, leaves the previous file as it was), and with ``--out run.npz`` each finished chunk of
samples (``--chunk``) is kept in the folder ``run.npz.parts/`` as the run goes
(:mod:`sodyn.simulate.store`).  After Ctrl-C (exit status 130) or a crash, the same command with
``--resume`` loads those chunks, runs only the missing ones and writes ``run.npz``, equal to an
uninterrupted run's; the folder is removed once ``run.npz`` is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sodyn import cli_view
from sodyn.cli_models import BUILTINS, DEFAULT_MODEL, info
from sodyn.cli_outputs import PARTS_SUFFIX, CliError, WriteError, quiet_stdout
from sodyn.cli_simulate import simulate


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``prog: error: message``) and defaults in the help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---------------------------------------------------------------------------
# argument types (checked while parsing, before JAX starts)
# ---------------------------------------------------------------------------


def _number(convert, what: str, ok):
    """An argparse type: ``convert(text)`` that must satisfy ``ok``, else a one-line error
    naming ``what`` ("a positive integer", ...)."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value

    return parse


_positive_int = _number(int, "a positive integer", lambda x: x >= 1)
_count = _number(int, "a non-negative integer", lambda x: x >= 0)
_positive_float = _number(float, "a positive finite number", lambda x: 0 < x < float("inf"))
_non_negative_float = _number(float, "a non-negative finite number", lambda x: 0 <= x < float("inf"))


def _fraction(text: str) -> float:
    value = _non_negative_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``sodyn simulate``, ``sodyn info`` and ``sodyn view`` (:mod:`sodyn.cli_view`)."""
    parser = _Parser(prog="sodyn", description="sodyn simulate [MODEL]: a batched Monte Carlo simulation of a "
                                               "built-in model or a URDF/MJCF file, with a summary; sodyn info "
                                               "[MODEL]: a model's bodies, joints, frames and q/v layout.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{simulate,info,view}")
    model_help = (f"a built-in model ({', '.join(BUILTINS)}), a robot of example-robot-data (e.g. solo12, "
                  "talos_reduced), a .urdf file or an MJCF .xml file")

    sim = sub.add_parser("simulate", help="batched Monte Carlo simulation with a summary",
                         description="Batched Monte Carlo simulation (sodyn.monte_carlo) of random initial states "
                                     "near the home configuration (floating bases above the ground), unactuated, "
                                     "with a progress bar and a summary.")
    sim.add_argument("model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL", help=model_help)
    sim.add_argument("--floating-base", action="store_true", help="URDF: add a free joint at the root")
    sim.add_argument("--batch", type=_positive_int, default=1024, help="number of samples")
    sim.add_argument("--steps", type=_positive_int, default=500, help="time steps per sample")
    sim.add_argument("--dt", type=_positive_float, default=1e-3, help="time step [s]")
    sim.add_argument("--integrator", default="implicit", choices=("implicit", "semi_implicit", "rk4"),
                     help="time stepper")
    sim.add_argument("--contact", action="store_true",
                     help="contact: the model's collision geoms against each other and the ground (its own "
                          "world plane, else z = 0); without geoms, points at frames named like feet (foot, feet, "
                          "toe, sole), else at the leaf bodies' tip frames, on the plane z = 0 (lowered under a "
                          "hanging fixed-base model)")
    sim.add_argument("--randomize", type=_fraction, default=0.0, metavar="FRACTION",
                     help="scale each body's mass and inertia (and the contact friction) by U(1 - "
                          "FRACTION, 1 + FRACTION); 0: nominal parameters")
    sim.add_argument("--noise", type=_non_negative_float, default=None,
                     help="initial joint angle noise (std, rad or m) about the home configuration (default 0.3; "
                          "0 with --stand)")
    sim.add_argument("--velocity-noise", type=_non_negative_float, default=None,
                     help="initial joint velocity noise (std; default 0.1, 0 with --stand)")
    sim.add_argument("--stand", nargs="?", const="", default=None, metavar="POSE",
                     help="hold a pose with PD servos on every joint (gains from the joints' inertia at the pose, "
                          "the pose's static feed-forward): a keyframe's name (an SRDF group_state of an "
                          "example-robot-data robot, an MJCF key), or the first keyframe; a floating base starts "
                          "on the ground (--contact implied)")
    sim.add_argument("--seed", type=int, default=0, help="random seed")
    sim.add_argument("--float64", action="store_true", help="simulate in float64 instead of float32")
    sim.add_argument("--cores", type=_count, default=0, help="CPU cores to split the batch over; 0: all")
    sim.add_argument("--out", metavar="FILE.npz", help="save the summary, the sampled parameters, the initial "
                                                       "and final states and, for a model with sensors, their "
                                                       "readings' statistics per step to this .npz file")
    sim.add_argument("--plot", metavar="FILE.png", help="save energy (and base height) bands over time and the "
                                                        "final pose of sample 0 to this image")
    sim.add_argument("--gif", metavar="FILE.gif", help="save an animation of sample 0 (simulated again alone) "
                                                       "to this GIF")
    sim.add_argument("--chunk", type=_count, default=0, help="samples per chunk (with --out, each finished chunk "
                                                             "is kept in FILE.npz.parts/ until FILE.npz is "
                                                             "written); 0: automatic")
    sim.add_argument("--force", action="store_true", help="replace existing --out, --plot and --gif files (and "
                                                          "start an interrupted --out run over)")
    sim.add_argument("--resume", action="store_true", help="continue an interrupted --out run from the chunks in "
                                                           "FILE.npz.parts/: only the missing chunks run")

    info_parser = sub.add_parser("info", help="describe a model: bodies, joints, frames, masses, q/v layout",
                                 description="Describe a model: bodies, joints, frames, masses and the q/v layout.")
    info_parser.add_argument("model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL", help=model_help)
    info_parser.add_argument("--floating-base", action="store_true", help="URDF: add a free joint at the root")
    cli_view.add_parser(sub, model_help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failure, 2 bad argument or file)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a bad argument (2), already reported
        return int(e.code or 0)
    prog = f"sodyn {args.command}"
    try:
        status = {"simulate": simulate, "info": info, "view": cli_view.run}[args.command](args)
        sys.stdout.flush()
        return status
    except CliError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except WriteError as e:
        print(f"{prog}: failed: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        quiet_stdout()
        return 0
    except KeyboardInterrupt:
        parts = getattr(args, "out", None) and args.out + PARTS_SUFFIX
        kept = (f": the finished chunks are in {parts!r}; the same command with --resume continues"
                if parts and os.path.isdir(parts) else "")
        print(f"{prog}: interrupted{kept}", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - one line, never a traceback (unless asked for)
        if os.environ.get("SODYN_TRACEBACK"):
            raise
        message = " ".join(str(e).split()) or "(no message)"
        print(f"{prog}: failed: {type(e).__name__}: {message} (SODYN_TRACEBACK=1 shows the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
