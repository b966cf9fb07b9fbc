"""Batched operational-space inertia Λ: sodyn (Ω recursions, jit + vmap) vs Pinocchio
(``computeMinverse`` + ``getFrameJacobian``, then ``J M⁻¹ Jᵀ`` and its inverse per sample).

Both are timed in one process, float64, on the same random states.  Usage::

    python bench/osc_bench.py [--batch 1024] [--repeats 5]

Cases: Panda, 6D end effector (``panda_hand_tcp``, LOCAL); Solo12 (free flyer), four 3D feet
(LOCAL).  Reports per-sample microseconds (best of ``repeats``) and the compile time.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.io import from_pinocchio, q_from_pinocchio  # noqa: E402

CASES = {
    "panda_ee6d": ("panda_description/urdf/panda.urdf", False, [("panda_hand_tcp", 6)]),
    "solo12_feet3d": ("solo_description/robots/solo12.urdf", True,
                      [("FL_FOOT", 3), ("FR_FOOT", 3), ("HL_FOOT", 3), ("HR_FOOT", 3)]),
}


def robots_dir() -> pathlib.Path:
    for p in sys.path:
        d = pathlib.Path(p) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if d.is_dir():
            return d
    raise SystemExit("example-robot-data is not installed")


def pinocchio_lambda(pin, pm, data, qp, frames):
    minv = pin.computeMinverse(pm, data, qp)
    minv = np.triu(minv) + np.triu(minv, 1).T
    pin.computeJointJacobians(pm, data, qp)
    pin.updateFramePlacements(pm, data)
    rows = []
    for fid, d in frames:
        j = pin.getFrameJacobian(pm, data, fid, pin.LOCAL)
        rows.append(np.vstack([j[3:], j[:3]]) if d == 6 else j[:3])
    J = np.vstack(rows)
    return np.linalg.inv(J @ minv @ J.T)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import pinocchio as pin

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, batch {args.batch}, float64")
    for name, (rel, floating, frames) in CASES.items():
        path = str(robots_dir() / rel)
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
        model = from_pinocchio(pm)
        tasks = [sd.FrameTask(f) if d == 6 else sd.PointTask(f) for f, d in frames]
        np.random.seed(0)
        qps = [pin.randomConfiguration(pm) for _ in range(args.batch)]
        if floating:  # Pinocchio's free-flyer position limits are infinite
            rng = np.random.default_rng(0)
            for qp in qps:
                qp[:3] = rng.normal(size=3)
        qs = jnp.stack([q_from_pinocchio(model, qp) for qp in qps])

        fn = sd.jit(jax.vmap(lambda q: sd.operational_space_inertia(model, q, tasks)))
        t0 = time.perf_counter()
        lam = fn(qs).block_until_ready()
        compile_s = time.perf_counter() - t0
        best = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn(qs).block_until_ready()
            best = min(best, time.perf_counter() - t0)

        data = pm.createData()
        pframes = [(pm.getFrameId(f), d) for f, d in frames]
        best_pin = np.inf
        ref = None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            ref = [pinocchio_lambda(pin, pm, data, qp, pframes) for qp in qps]
            best_pin = min(best_pin, time.perf_counter() - t0)
        err = max(np.max(np.abs(np.asarray(lam[i]) - ref[i])) / np.max(np.abs(ref[i])) for i in range(0, args.batch, 97))
        print(f"{name:14s} nv={model.nv:2d} m={lam.shape[-1]:2d}  sodyn {1e6 * best / args.batch:8.2f} us/sample "
              f"(compile {compile_s:5.1f} s)  pinocchio+numpy {1e6 * best_pin / args.batch:8.2f} us/sample  "
              f"max rel diff {err:.1e}")


if __name__ == "__main__":
    main()
