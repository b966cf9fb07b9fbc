"""Command line: ``sodyn simulate`` runs a batched Monte Carlo rollout of a built-in model (or a
URDF/MJCF file) and reports energy behaviour and speed; ``sodyn info`` describes a model."""

from __future__ import annotations

import argparse
import sys
import time

BUILTINS = ("pendulum_chain", "double_pendulum", "cart_pole", "cdi_satellite", "humanoid_like")


def _load(spec: str, floating_base: bool):
    import sodyn as sd
    from sodyn import models

    if spec in BUILTINS:
        return getattr(models, spec)()
    if spec.endswith(".urdf"):
        return sd.load_urdf(spec, floating_base=floating_base)
    if spec.endswith(".xml"):
        return sd.load_mjcf(spec)
    raise SystemExit(f"sodyn: unknown model {spec!r}: use one of {', '.join(BUILTINS)}, a .urdf or an MJCF .xml file")


def _simulate(args) -> int:
    import jax
    import jax.numpy as jnp
    import numpy as np

    if args.float64:
        jax.config.update("jax_enable_x64", True)
    import sodyn as sd

    try:
        cores = sd.use_cpu_cores(args.cores or None)  # before the first JAX computation
    except RuntimeError:  # called from a process where JAX already runs: keep its devices
        cores = len(jax.local_devices())

    model = _load(args.model, args.floating_base)
    dtype = jnp.float64 if args.float64 else jnp.float32
    model = model.astype(dtype)
    keys = jax.random.split(jax.random.PRNGKey(args.seed), args.batch)
    q0 = jax.vmap(lambda k: sd.random_configuration(model, k, scale=0.5))(keys)
    v0 = 0.1 * jax.random.normal(jax.random.PRNGKey(args.seed + 1), (args.batch, model.nv), dtype)

    def energy(q, v):
        return sd.kinetic_energy(model, q, v) + sd.potential_energy(model, q)

    def run(q0, v0):
        traj = sd.rollout(model, sd.State.initial(model, q0, v0), None, args.dt, args.steps,
                          integrator=args.integrator)
        end = jax.tree_util.tree_map(lambda x: x[-1], traj.states)
        return end.q, energy(q0, v0), energy(end.q, end.v)

    fn = sd.jit(sd.batch(run))
    t0 = time.perf_counter()
    jax.block_until_ready(fn(q0, v0))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    q_end, e0, e1 = jax.block_until_ready(fn(q0, v0))
    run_s = time.perf_counter() - t0
    drift = np.abs(np.asarray(e1) - np.asarray(e0)) / np.maximum(np.abs(np.asarray(e0)), 1.0)
    steps = args.batch * args.steps
    print(f"model        {model!r}")
    print(f"rollout      batch {args.batch} x {args.steps} steps of {args.dt} s "
          f"({np.dtype(dtype).name}, unactuated, gravity on), {cores} CPU core(s)")
    print(f"compile      {compile_s:.2f} s")
    print(f"run          {run_s:.3f} s  = {run_s / steps * 1e6:.2f} us per forward-dynamics step and sample")
    print(f"energy drift median {np.median(drift):.2e}, max {np.max(drift):.2e} (relative, {args.integrator})")
    print(f"finite       {bool(np.all(np.isfinite(np.asarray(q_end))))}")
    return 0


def _info(args) -> int:
    model = _load(args.model, args.floating_base)
    print(repr(model))
    for k, (name, jt) in enumerate(zip(model.joint_names, model.joint_types)):
        print(f"  body {k:3d} {model.body_names[k]:30s} joint {name:30s} {jt:10s} "
              f"q[{model.joint_q_slice(k).start}:{model.joint_q_slice(k).stop}] parent {int(model.parent[k])}")
    print(f"  frames: {len(model.frame_names)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sodyn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="batched Monte Carlo rollout")
    sim.add_argument("--model", default="pendulum_chain", help=f"{', '.join(BUILTINS)}, or a .urdf/.xml path")
    sim.add_argument("--floating-base", action="store_true", help="URDF: add a free joint at the root")
    sim.add_argument("--batch", type=int, default=1024)
    sim.add_argument("--steps", type=int, default=500)
    sim.add_argument("--dt", type=float, default=1e-3)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--float64", action="store_true")
    sim.add_argument("--integrator", default="implicit", choices=("implicit", "semi_implicit", "rk4"))
    sim.add_argument("--cores", type=int, default=0, help="CPU cores to split the batch over (default: all)")
    info = sub.add_parser("info", help="describe a model")
    info.add_argument("model")
    info.add_argument("--floating-base", action="store_true")
    args = parser.parse_args(argv)
    return _simulate(args) if args.command == "simulate" else _info(args)


if __name__ == "__main__":
    sys.exit(main())
