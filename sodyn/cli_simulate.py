"""``sodyn simulate [MODEL]``: a batched Monte Carlo simulation (:func:`sodyn.monte_carlo`) of
random initial states near the home configuration, and its summary.

Per sample the summary keeps the final ``q``, whether the run stayed finite, the energy
``E = T + V`` (kinetic + gravitational potential) at the end and its drift
``|E(T) − E(dt)| / max(|E(dt)|, 1 J)``, a floating base's height and the sensor readings.
``--stand`` holds a pose with PD servos (:mod:`sodyn.cli_stand`), ``--contact`` adds contact
(:mod:`sodyn.cli_contact`); ``--out``, ``--plot`` and ``--gif`` are written atomically
(:mod:`sodyn.cli_outputs`), ``--plot``/``--gif`` with a model file's meshes (:mod:`sodyn.cli_view`).
"""

from __future__ import annotations

import os
import shutil

from sodyn import cli_stand
from sodyn.cli_contact import CLEARANCE, contact_for, geom_contact_for, has_floating_base
from sodyn.cli_models import check_model_spec, from_urdf, load_model
from sodyn.cli_outputs import PARTS_SUFFIX, CliError, check_parts, check_writable, save_npz, say, write

PLOT_FORMATS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


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
    check_model_spec(args.model)
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


def simulate(args) -> int:
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
    model = load_model(args.model, args.floating_base).astype(dtype)
    hint = cli_stand.fixed_base_hint(model, from_urdf(args.model), args.floating_base)
    if hint:
        say(hint)
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
    say(f"model        {model!r}")
    say(f"samples      {args.batch} x {args.steps} steps of {args.dt:g} s ({', '.join(what)}), "
          f"{cores} CPU core(s)")
    say(f"compile      {compile_s:.2f} s")
    say(f"run          {run_s:.3f} s  = {run_s / steps * 1e6:.2f} us per step and sample")
    if n_ok:
        say(f"energy drift median {np.median(drift[ok]):.2e}, max {np.max(drift[ok]):.2e} "
              "(|E(T) - E(dt)| / max(|E(dt)|, 1 J))")
    say(f"finite       {n_ok}/{args.batch} samples")
    say()
    say(f"{'at the end':18s} {'mean':>11s} {'std':>11s} {'min':>11s} {'max':>11s}")
    rows = [("energy [J]", "energy_end", None), ("energy drift", "energy_drift", None),
            ("base height [m]", "base_height", -1)]
    for label, name, index in rows:
        if name in result.stats:
            s = result.stats[name]
            cells = [np.asarray(getattr(s, f)) for f in ("mean", "std", "min", "max")]
            cells = [c[index] if index is not None else c for c in cells]
            say(f"{label:18s} " + " ".join(f"{float(c):11.4g}" for c in cells))

    if args.out:
        write(args.out, "--out", lambda temp: save_npz(args, model, result, rule, temp), parts)
        shutil.rmtree(parts, ignore_errors=True)  # run.npz holds everything now
        say(f"wrote        {args.out}")
    if args.plot:
        write(args.plot, "--plot", lambda temp: _plot(args, model, result, contact, temp))
        say(f"wrote        {args.plot}")
    if args.gif:
        write(args.gif, "--gif", lambda temp: _gif(args, model, result, dist, sampler, kwargs, contact, temp))
        say(f"wrote        {args.gif}")
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


__all__ = ["PLOT_FORMATS", "simulate"]
