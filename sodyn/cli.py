"""The ``sodyn`` command line (also ``python -m sodyn``).

``sodyn simulate [MODEL]`` runs a batched Monte Carlo simulation (:func:`sodyn.monte_carlo`) of a
built-in model or a URDF/MJCF file and prints a summary; ``sodyn info [MODEL]`` describes a model;
``sodyn view MODEL`` shows it with its meshes (:mod:`sodyn.cli_view`).

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
import shutil
import sys
from collections.abc import Sequence

from sodyn import cli_stand
from sodyn.cli_contact import CLEARANCE, contact_for, geom_contact_for, has_floating_base
from sodyn.cli_outputs import PARTS_SUFFIX, CliError, WriteError, check_parts, check_writable, save_npz, write

BUILTINS = ("pendulum_chain", "double_pendulum", "cart_pole", "cdi_satellite", "humanoid_like")
DEFAULT_MODEL = "pendulum_chain"
PLOT_FORMATS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


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


# ---------------------------------------------------------------------------
# models and output paths
# ---------------------------------------------------------------------------


def _example_robot(spec: str) -> bool:
    """Whether ``spec`` names a robot of example-robot-data (when it is installed)."""
    if spec.endswith((".urdf", ".xml")) or spec in BUILTINS:
        return False
    try:
        from sodyn.io.robot_data import example_robot

        example_robot(spec)
    except (ValueError, FileNotFoundError):
        return False
    return True


def _from_urdf(spec: str) -> bool:
    return spec.endswith(".urdf") or _example_robot(spec)


def _check_model_spec(spec: str) -> None:
    if spec in BUILTINS or _example_robot(spec):
        return
    if spec.endswith((".urdf", ".xml")):
        if not os.path.isfile(spec):
            raise CliError(f"model file {spec!r} not found")
        if not os.access(spec, os.R_OK):
            raise CliError(f"model file {spec!r} is not readable")
        return
    raise CliError(f"unknown model {spec!r}: use one of {', '.join(BUILTINS)}, a robot of example-robot-data "
                   "(sodyn.example_robots()), a .urdf or an MJCF .xml file")


def _load(spec: str, floating_base: bool):
    """The model ``spec`` names (a built-in, a URDF or an MJCF file); file errors as :class:`CliError`."""
    _check_model_spec(spec)
    import sodyn as sd
    from sodyn import models

    if spec in BUILTINS:
        return getattr(models, spec)()
    try:
        if _example_robot(spec):   # its SRDF's poses become keyframes (--stand)
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


# ---------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------


def _summary(per_step_energy: bool):
    """The per-sample summary: ``final_q``, ``finite``, ``energy_end`` ``E(T)``, ``energy_drift =
    |E(T) − E(dt)| / max(|E(dt)|, 1 J)`` (``E`` kinetic + gravitational potential energy after
    each step), for a floating base ``base_height`` per step, with ``per_step_energy``
    (for ``--plot``) ``energy`` per step (:func:`sodyn.simulate.monte_carlo.default_summary`),
    and for a model with sensors their readings per step, ``sensors (steps, total_dim)``."""
    import jax.numpy as jnp

    from sodyn.algorithms.kinematics import kinetic_energy, potential_energy
    from sodyn.simulate.monte_carlo import default_summary

    def summary(rollout, model):
        q, v = rollout.states.q, rollout.states.v
        if per_step_energy:
            out = default_summary(rollout, model)
            first, last = out["energy"][0], out["energy"][-1]
        else:
            out = {"final_q": q[-1], "finite": jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v))}
            if has_floating_base(model):
                out["base_height"] = default_summary(rollout, model)["base_height"]  # the rest is dead code
            first, last = (kinetic_energy(model, q[i], v[i]) + potential_energy(model, q[i]) for i in (0, -1))
        out["energy_end"] = last
        out["energy_drift"] = jnp.abs(last - first) / jnp.maximum(jnp.abs(first), 1.0)
        if rollout.sensors is not None:
            out["sensors"] = rollout.sensors
        return out

    return summary


def _check_simulate_args(args) -> None:
    _check_model_spec(args.model)
    check_writable(args.out, "--out", (".npz",), args.force)
    check_writable(args.plot, "--plot", PLOT_FORMATS, args.force)
    check_writable(args.gif, "--gif", (".gif",), args.force)
    check_parts(args)
    if args.plot or args.gif:
        try:
            import matplotlib  # noqa: F401
            import PIL  # noqa: F401
        except ImportError as e:
            raise CliError(f"--plot and --gif need matplotlib and Pillow ({e}); pip install matplotlib") from None


def _simulate(args) -> int:
    _check_simulate_args(args)
    import jax

    if args.float64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import sodyn as sd

    try:
        cores = sd.use_cpu_cores(args.cores or None)  # before the first JAX computation
    except RuntimeError:  # called from a process where JAX already runs: keep its devices
        cores = len(jax.local_devices())

    dtype = jnp.float64 if args.float64 else jnp.float32
    model = _load(args.model, args.floating_base).astype(dtype)
    hint = cli_stand.fixed_base_hint(model, _from_urdf(args.model), args.floating_base)
    if hint:
        _say(hint)
    standing = args.stand is not None
    if standing and has_floating_base(model) and not args.contact:
        args.contact = True    # a floating robot stands on the ground
    ground, rule = contact_for(model) if args.contact else (None, "")
    contact = ground
    if ground is not None and rule.startswith("collision geoms"):
        model, contact = geom_contact_for(model, ground)
        rule = rule.replace("collision geoms", f"the model's geoms, {contact.n_pairs} candidate pairs")
    spec = {}
    if args.randomize > 0:
        scale = sd.simulate.uniform_scale(1.0 - args.randomize, 1.0 + args.randomize)
        spec[("model.mass", "model.inertia")] = scale
        if contact is not None:
            spec["contact.friction"] = scale
    dist = sd.simulate.ParameterDistribution(spec) if spec else None
    points = None if ground is None else (ground.body, ground.position)
    radius = 0.0 if ground is None else float(np.max(np.asarray(ground.radius)))
    noise = (0.0 if standing else 0.3) if args.noise is None else args.noise
    velocity_noise = (0.0 if standing else 0.1) if args.velocity_noise is None else args.velocity_noise
    kwargs = {"integrator": args.integrator}
    controls, doing = None, "unactuated"
    if standing:
        q_pose, servos, control, doing = cli_stand.stand(model, args.stand)
        roots = [k for k in range(model.n_bodies) if model.joint_types[k] == "free" and int(model.parent[k]) < 0]
        height = float(q_pose[int(model.topology.q_start[roots[0]]) + 2]) if roots else None
        sampler = sd.simulate.home_sampler(q=q_pose, noise=noise, velocity_noise=velocity_noise, base_height=height,
                                           orientation_noise=0.0)
        controls = jnp.tile(control, (args.steps, 1))
        kwargs["actuators"] = servos
    else:
        sampler = sd.simulate.home_sampler(noise=noise, velocity_noise=velocity_noise, points=points,
                                           clearance=CLEARANCE + radius)
    if contact is not None:
        kwargs["contact"] = contact
    key = jax.random.PRNGKey(args.seed)

    parts = args.out + PARTS_SUFFIX if args.out else None
    if parts and os.path.isdir(parts) and not args.resume:  # --force: start over
        shutil.rmtree(parts)
    from sodyn.simulate.store import StoreMismatchError

    try:
        result = sd.monte_carlo(model, dist, sampler, controls, args.dt, args.steps, args.batch, key, keep="final",
                                summary=_summary(bool(args.plot)), chunk=args.chunk or None, store=parts,
                                resume=args.resume, **kwargs)
    except StoreMismatchError as e:
        raise CliError(f"--resume: {e} (--force starts over)") from None
    compile_s, run_s = result.compile_seconds, result.seconds - result.compile_seconds

    drift = result.values["energy_drift"]
    ok = result.finite
    n_ok = int(np.sum(ok))
    steps = args.batch * args.steps
    what = [np.dtype(dtype).name, args.integrator, doing,
            "gravity on" if np.any(np.asarray(model.gravity) != 0) else "no gravity",
            f"contact in {len(contact)} slots ({rule})" if contact is not None else "no contact"]
    if args.randomize > 0:
        what.append(f"mass, inertia{', friction' if contact is not None else ''} x U(1 ± {args.randomize:g})")
    _say(f"model        {model!r}")
    _say(f"samples      {args.batch} x {args.steps} steps of {args.dt:g} s ({', '.join(what)}), "
          f"{cores} CPU core(s)")
    _say(f"compile      {compile_s:.2f} s")
    _say(f"run          {run_s:.3f} s  = {run_s / steps * 1e6:.2f} us per step and sample")
    if n_ok:
        _say(f"energy drift median {np.median(drift[ok]):.2e}, max {np.max(drift[ok]):.2e} "
              "(|E(T) - E(dt)| / max(|E(dt)|, 1 J))")
    _say(f"finite       {n_ok}/{args.batch} samples")
    _say()
    _say(f"{'at the end':18s} {'mean':>11s} {'std':>11s} {'min':>11s} {'max':>11s}")
    rows = [("energy [J]", "energy_end", None), ("energy drift", "energy_drift", None),
            ("base height [m]", "base_height", -1)]
    for label, name, index in rows:
        if name in result.stats:
            s = result.stats[name]
            cells = [np.asarray(getattr(s, f)) for f in ("mean", "std", "min", "max")]
            cells = [c[index] if index is not None else c for c in cells]
            _say(f"{label:18s} " + " ".join(f"{float(c):11.4g}" for c in cells))

    if args.out:
        write(args.out, "--out", lambda temp: save_npz(args, model, result, rule, temp), parts)
        shutil.rmtree(parts, ignore_errors=True)  # run.npz holds everything now
        _say(f"wrote        {args.out}")
    if args.plot:
        write(args.plot, "--plot", lambda temp: _plot(args, model, result, contact, temp))
        _say(f"wrote        {args.plot}")
    if args.gif:
        write(args.gif, "--gif", lambda temp: _gif(args, model, result, dist, sampler, kwargs, contact, temp))
        _say(f"wrote        {args.gif}")
    return 0


def _plot(args, model, result, contact, path: str) -> None:
    import numpy as np

    from sodyn import viewer

    Figure, FigureCanvasAgg, _ = viewer.matplotlib_classes()
    bands = [("energy", "energy [J]")] + ([("base_height", "base height [m]")] if "base_height" in result.stats else [])
    fig = Figure(figsize=(5.0 * (len(bands) + 1), 4.5), dpi=100)
    FigureCanvasAgg(fig)
    t = args.dt * np.arange(1, args.steps + 1)
    for j, (name, label) in enumerate(bands):
        ax = fig.add_subplot(1, len(bands) + 1, j + 1)
        s = result.stats[name]
        ax.fill_between(t, s.min, s.max, color="tab:blue", alpha=0.2, linewidth=0, label="min - max")
        ax.fill_between(t, s.mean - s.std, s.mean + s.std, color="tab:blue", alpha=0.4, linewidth=0,
                        label="mean ± std")
        ax.plot(t, s.mean, color="tab:blue", label="mean")
        ax.set_xlabel("t [s]")
        ax.set_ylabel(label)
        ax.set_title(f"{label.split(' [')[0]} over {s.count} finite samples")
        ax.legend(loc="best", fontsize="small")
    from sodyn import cli_view

    ground = contact is not None or has_floating_base(model)
    if not cli_view.simulate_panel(fig, (1, len(bands) + 1, len(bands) + 1), args, model, result, ground):
        ax = fig.add_subplot(1, len(bands) + 1, len(bands) + 1, projection="3d")
        q = np.asarray(result.final.q[0])
        if np.all(np.isfinite(q)):
            viewer.draw_pose(model, q, ax, contact=contact, ground=ground,
                             title=f"sample 0 at t = {args.dt * args.steps:g} s")
    fig.tight_layout()
    fig.savefig(path)


def _gif(args, model, result, dist, sampler, kwargs, contact, path: str) -> None:
    """Sample 0 recomputed alone from its keys (``sodyn.simulate.monte_carlo``'s module doc) and animated."""
    import jax
    import numpy as np

    import sodyn as sd
    from sodyn import viewer

    nominal = {"model": model, **({"contact": contact} if contact is not None else {})}

    @jax.jit
    def sample_zero(pk, sk):
        sample = dist(pk, nominal) if dist is not None else nominal
        state = sampler(sk, sample["model"])
        rest = {k: v for k, v in kwargs.items() if k != "contact"}
        ro = sd.rollout(sample["model"], state, None, args.dt, args.steps, contact=sample.get("contact"), **rest)
        return state.q, ro.states.q, sample.get("contact"), ro.contact_force

    q0, qs, sample_contact, force = sample_zero(result.param_keys[0], result.state_keys[0])
    qs = np.concatenate([np.asarray(q0)[None], np.asarray(qs)])
    finite = np.all(np.isfinite(qs), axis=1)
    qs = qs[: int(np.argmin(finite)) if not np.all(finite) else len(qs)]
    if len(qs) == 0:
        raise CliError("--gif: sample 0 is not finite at the start")
    from sodyn import cli_view

    ground = contact is not None or has_floating_base(model)
    if not cli_view.simulate_animation(args, model, qs, sample_contact, force, ground, path):
        viewer.animate(model, qs, path, dt=args.dt, contact=sample_contact, ground=ground, title=model.name)


# ---------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------


def _info(args) -> int:
    import numpy as np

    model = _load(args.model, args.floating_base)
    hint = cli_stand.fixed_base_hint(model, _from_urdf(args.model), args.floating_base)
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


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
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

    info = sub.add_parser("info", help="describe a model: bodies, joints, frames, masses, q/v layout",
                          description="Describe a model: bodies, joints, frames, masses and the q/v layout.")
    info.add_argument("model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL", help=model_help)
    info.add_argument("--floating-base", action="store_true", help="URDF: add a free joint at the root")
    from sodyn import cli_view

    cli_view.add_parser(sub, model_help)
    return parser


def _say(text: str = "") -> None:
    """``print`` to stdout that outlives a closed pipe (``sodyn simulate | head -3`` still writes
    its ``--out``, ``--plot`` and ``--gif`` files)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _quiet_stdout()


def _quiet_stdout() -> None:
    """After a closed pipe (``sodyn info | head -1``): send the rest of stdout to /dev/null so the
    interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (e.g. captured)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failure, 2 bad argument or file)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a bad argument (2), already reported
        return int(e.code or 0)
    prog = f"sodyn {args.command}"
    try:
        from sodyn import cli_view

        status = {"simulate": _simulate, "info": _info, "view": cli_view.run}[args.command](args)
        sys.stdout.flush()
        return status
    except CliError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except WriteError as e:
        print(f"{prog}: failed: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        _quiet_stdout()
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
