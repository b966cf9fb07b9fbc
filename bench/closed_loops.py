"""Closed-loop forward dynamics against the tree's and against Pinocchio's ``constraintDynamics``.

For the four-bar and the delta-like mechanism of ``tests/mechanisms.py`` (MJCF with
``<equality connect>``), float64 (``--dtype``), on JAX's default device, one process: ``sodyn.jit(jax.vmap(...))`` of
``constrained_forward_dynamics`` (augmented) and of ``forward_dynamics`` on the open tree at
batch ``--batch`` (taking turns in each round: the best time of each over ``--rounds``, and the
median over rounds of the ratio of the two times taken in the same round), and Pinocchio 4's
``constraintDynamics`` called per sample from Python (one thread; the Python call overhead is
included and stated; left out where Pinocchio is not installed).  Prints a markdown table.

    python bench/closed_loops.py [--batch 4096] [--rounds 30] [--dtype float32]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)

import sodyn as sd  # noqa: E402
from sodyn.io.mjcf import q_to_mujoco, v_to_mujoco  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from mechanisms import DELTA, FOURBAR  # noqa: E402


def _timed(fns, rounds: int) -> list[list[float]]:
    """The times of each of ``fns`` in each of ``rounds`` rounds, the functions taking turns in
    each round (on a shared machine, the times of one round are taken under the same load)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            times[i].append(time.perf_counter() - t0)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--pin-samples", type=int, default=2000)
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    args = p.parse_args()
    try:
        import pinocchio as pin
    except ImportError:  # a machine without Pinocchio (the GPU machine): sodyn's columns only
        pin = None
    dtype = getattr(jax.numpy, args.dtype)

    sd.runtime.reuse_freed_memory()
    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}, {args.dtype}, B = {args.batch}\n")
    print("| mechanism | nv | rows | tree FD µs | closed-loop FD µs | ratio of best | median paired ratio | "
          "Pinocchio constraintDynamics µs | sodyn / Pinocchio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, xml in (("four-bar", FOURBAR), ("delta", DELTA)):
        model, eq = sd.load_mjcf(xml, with_constraints=True)
        model = model.astype(dtype)
        closures = sd.LoopClosures.from_equality(model, eq)
        keys = jax.random.split(jax.random.PRNGKey(0), args.batch)
        q = jax.vmap(lambda k: sd.integrate(model, model.q_neutral, 0.2 * jax.random.normal(k, (model.nv,), dtype)))(keys)
        v = 0.1 * jax.random.normal(jax.random.PRNGKey(1), (args.batch, model.nv), dtype)
        tau = 0.1 * jax.random.normal(jax.random.PRNGKey(2), (args.batch, model.nv), dtype)
        tree = sd.jit(jax.vmap(lambda q, v, t: sd.forward_dynamics(model, q, v, t)))
        closed = sd.jit(jax.vmap(lambda q, v, t: sd.constrained_forward_dynamics(model, q, v, t, closures)[0]))
        jax.block_until_ready((tree(q, v, tau), closed(q, v, tau)))
        times_tree, times_closed = _timed([lambda: tree(q, v, tau), lambda: closed(q, v, tau)], args.rounds)
        t_tree, t_closed = (min(t) / args.batch * 1e6 for t in (times_tree, times_closed))
        paired = float(np.median([c / t for c, t in zip(times_closed, times_tree)]))
        if pin is None:
            print(f"| {name} | {model.nv} | {closures.n_rows} | {t_tree:.3g} | {t_closed:.3g} | "
                  f"{t_closed / t_tree:.2f} | {paired:.2f} | – | – |")
            continue

        path = pathlib.Path(tempfile.mkdtemp()) / f"{name}.xml"
        path.write_text(xml)
        pm, cons, _ = pin.buildModelAndConstraintsFromMJCF(str(path))
        models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        for c in cons:
            r = pin.convertToRigidConstraintModel(pm, c)
            models.append(r)
            datas.append(r.createData())
        pd = pm.createData()
        pin.initConstraintDynamics(pm, pd, models, datas)
        settings = pin.ProximalSettings(1e-12, 1e-10, 50)
        n = min(args.pin_samples, args.batch)
        qs, vs, ts = [], [], []
        for i in range(n):
            qm = np.asarray(q_to_mujoco(model, q[i]), float).copy()
            for k, t in enumerate(model.joint_types):
                if t == "spherical":
                    s = int(model.topology.q_start[k])
                    qm[s:s + 4] = np.roll(qm[s:s + 4], -1)
            qs.append(qm)
            vs.append(np.asarray(v_to_mujoco(model, q[i], v[i])))
            ts.append(np.asarray(tau[i]))
        best = float("inf")
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for i in range(n):
                pin.constraintDynamics(pm, pd, qs[i], vs[i], ts[i], models, datas, settings)
            best = min(best, time.perf_counter() - t0)
        t_pin = best / n * 1e6
        rows = closures.n_rows
        print(f"| {name} | {model.nv} | {rows} | {t_tree:.2f} | {t_closed:.2f} | {t_closed / t_tree:.2f} | "
              f"{paired:.2f} | {t_pin:.2f} | {t_closed / t_pin:.2f} |")


if __name__ == "__main__":
    main()
