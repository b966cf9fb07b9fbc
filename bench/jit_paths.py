"""The paths a user writes, side by side on one CPU device: plain ``jax.jit(jax.vmap(f))``,
``equinox.filter_jit(jax.vmap(f))``, ``sodyn.jit(jax.vmap(f))`` and ``sodyn.jit(sodyn.batch(f))`` (cache-sized
chunks, one device), against Pinocchio (float64:
``abaInParallel`` / ``rneaInParallel`` with one thread, ``crba`` and ``computeMinverse`` loops).

The process runs a JAX computation before it imports sodyn, as a user's program may (sodyn's
import changes nothing in JAX either way).  Ops:
forward dynamics, inverse dynamics, ``M``, ``M⁻¹`` (batch ``--batch``), and ``jax.grad`` of a
``--steps``-step semi-implicit Euler rollout's loss with respect to its torques (batch
``--rollout-batch`` initial configurations, at rest, at zero torque, joint damping off).  Each variant is compiled once (its compile time is
reported) and the variants are timed in interleaved rounds; a row gives the median time per
sample and, in brackets, its ratio to ``sodyn.jit``'s.  The table replaces this JAX version's
(and mode's) section of ``--out`` (``bench/results.md``)::

    python bench/jit_paths.py                       # Panda, Solo12, Talos; float64 and float32
    python bench/jit_paths.py --models panda --dtypes float64 --rounds 3 --out /tmp/r.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
jnp.zeros(1).block_until_ready()  # JAX runs before sodyn is imported

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import equinox as eqx  # noqa: E402
import models as bm  # noqa: E402
import provenance  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.io import q_to_pinocchio, v_to_pinocchio  # noqa: E402

OPS = ("fd", "id", "M", "Minv", "rollout_grad")
#: How each path maps a per-sample function over the batch and compiles it.
JITS = {
    "jax.jit": lambda f: jax.jit(jax.vmap(f)),
    "eqx.filter_jit": lambda f: eqx.filter_jit(jax.vmap(f)),
    "sodyn.jit": lambda f: sd.jit(jax.vmap(f)),
    "sodyn.batch": lambda f: sd.jit(sd.batch(f, devices=None)),
}


def _functions(model, steps: int, dt: float) -> dict:
    # explicit semi-implicit Euler, joint damping and joint forces off: the program the tables in
    # bench/results.md were first measured with
    undamped = eqx.tree_at(lambda m: m.damping, model, jnp.zeros_like(model.damping))
    passive_off = sd.JointForces(limits=False, friction=False, springs=False)

    def rollout_grad(q, v, t):
        def loss(tau):
            traj = sd.rollout(undamped, sd.State.initial(undamped, q, v), tau, dt, steps,
                              integrator="semi_implicit", joint_forces=passive_off)
            return jnp.sum(traj.states.q ** 2) + 1e-3 * jnp.sum(tau ** 2)

        return jax.grad(loss)(jnp.broadcast_to(t, (steps,) + t.shape))

    return {
        "fd": lambda q, v, t: sd.forward_dynamics(model, q, v, t),
        "id": lambda q, v, t: sd.inverse_dynamics(model, q, v, t),
        "M": lambda q, v, t: sd.mass_matrix(model, q),
        "Minv": lambda q, v, t: sd.inverse_mass_matrix(model, q),
        "rollout_grad": rollout_grad,
    }


def _pinocchio(name: str, model, q, v, t):
    """Pinocchio's calls per op on the float64 inputs, one thread, as ``op -> (call, samples per
    call)`` (``None`` without ``pin``)."""
    try:
        import pinocchio as pin
    except ImportError:
        return None
    pm = bm.pin_model(name)
    data = pm.createData()
    qp = np.asarray(jax.vmap(lambda x: q_to_pinocchio(model, x))(q), np.float64)
    vp = np.asarray(jax.vmap(lambda x: v_to_pinocchio(model, x))(v), np.float64)
    tp = np.asarray(t, np.float64)
    pool = pin.ModelPool(pm, 1)
    cols = [np.asfortranarray(x.T) for x in (qp, vp, tp)]
    n = len(qp)
    loop_n = min(n, 256)
    calls = {
        "fd": (lambda: pin.abaInParallel(1, pool, *cols), n),
        "id": (lambda: pin.rneaInParallel(1, pool, *cols), n),
        "M": (lambda: [pin.crba(pm, data, qp[i]) for i in range(loop_n)], loop_n),
        "Minv": (lambda: [pin.computeMinverse(pm, data, qp[i]) for i in range(loop_n)], loop_n),
    }
    return calls


def _time(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def run(args) -> str:
    rows = []
    for name in args.models:
        for dtype_name in args.dtypes:
            dtype = jnp.dtype(dtype_name)
            model = bm.sodyn_model(name).astype(dtype)
            fns = _functions(model, args.steps, args.dt)
            pin_calls = None  # built once per model: every op but the rollout has the same inputs
            for op in args.ops:
                batch = args.rollout_batch if op == "rollout_grad" else args.batch
                keys = jax.random.split(jax.random.PRNGKey(0), batch)
                q = jax.vmap(lambda k: sd.random_configuration(model, k))(keys).astype(dtype)
                # a rollout starts at rest and its gradient is taken at zero torque: light distal links
                # under random torques leave the explicit stepper's stable range
                spread = 0.0 if op == "rollout_grad" else 1.0
                v = spread * jax.random.normal(jax.random.PRNGKey(1), (batch, model.nv), dtype)
                t = spread * jax.random.normal(jax.random.PRNGKey(2), (batch, model.nv), dtype)
                compiled, compile_s = {}, {}
                for jit_name, jit in JITS.items():
                    fn = jit(lambda q, v, t, f=fns[op]: f(q, v, t))
                    t0 = time.perf_counter()
                    jax.block_until_ready(fn(q, v, t))
                    compile_s[jit_name] = time.perf_counter() - t0
                    compiled[jit_name] = fn
                outs = {k: np.asarray(f(q, v, t)) for k, f in compiled.items()}
                ref = outs["sodyn.jit"]
                scale = 1.0 + np.abs(ref)
                agree = max(float(np.max(np.abs(o - ref) / scale)) for o in outs.values())
                calls = {k: (lambda f=f: jax.block_until_ready(f(q, v, t)), batch) for k, f in compiled.items()}
                if dtype == jnp.float64 and op != "rollout_grad" and "pin" not in args.skip:
                    pin_calls = pin_calls or _pinocchio(name, model, q, v, t)
                    if pin_calls:
                        calls["Pinocchio"] = pin_calls[op]
                times = {k: [] for k in calls}
                for _ in range(args.rounds):  # interleaved rounds
                    for k, (fn, n) in calls.items():
                        times[k] += [s / n for s in _time(fn, 3)]
                med = {k: float(np.median(x)) for k, x in times.items()}
                rows.append((name, dtype_name, op, batch, med, compile_s, agree))
                print(name, dtype_name, op, batch, {k: f"{x * 1e6:.2f}" for k, x in med.items()}, flush=True)
    return _table(rows, args)


def _table(rows, args) -> str:
    when = f"A JAX computation before `import sodyn`; `XLA_FLAGS` = `{os.environ.get('XLA_FLAGS', '')}`"
    head = (f"### Plain `jax.jit`, `eqx.filter_jit`, `sodyn.jit` of `jax.vmap`, and `sodyn.batch`, on one device "
            f"(jax {jax.__version__})\n\n"
            f"{when}. "
            f"{datetime.date.today()}, commit `{provenance.commit()}`, {provenance.machine()}, Python {platform.python_version()}. "
            f"µs per sample (median of {args.rounds} interleaved rounds of 3 calls), in brackets the ratio to "
            f"`sodyn.jit`; Pinocchio float64, one thread (`abaInParallel`, `rneaInParallel`, `crba` and "
            f"`computeMinverse` loops); `rollout_grad` is `jax.grad` of a {args.steps}-step rollout's loss "
            f"w.r.t. its torques; `sodyn.batch` is `sodyn.jit(sodyn.batch(f, devices=None))` (cache-sized chunks). "
            f"Compile: seconds to the first result (plain / eqx / sodyn.jit / sodyn.batch). "
            f"Agreement: largest |x − x_sodyn.jit| / (1 + |x_sodyn.jit|).\n\n")
    lines = ["| model | dtype | op | B | jax.jit | eqx.filter_jit | sodyn.jit | sodyn.batch | Pinocchio "
             "| jax.jit / Pinocchio | compile (s) | agreement |", "|" + "---|" * 12]
    for name, dtype, op, batch, med, comp, agree in rows:
        base = med["sodyn.jit"]
        cell = lambda k: f"{med[k] * 1e6:.2f} ({med[k] / base:.2f})" if k in med else "–"  # noqa: E731
        pin = med.get("Pinocchio")
        vs_pin = f"{med['jax.jit'] / pin:.2f}" if pin else "–"
        comp_s = " / ".join(f"{comp[k]:.1f}" for k in JITS)
        lines.append(f"| {name} | {dtype} | {op} | {batch} | {cell('jax.jit')} | {cell('eqx.filter_jit')} | "
                     f"{cell('sodyn.jit')} | {cell('sodyn.batch')} | {f'{pin * 1e6:.2f}' if pin else '–'} | {vs_pin} | "
                     f"{comp_s} | {agree:.0e} |")
    return head + "\n".join(lines) + "\n"


def _write(section: str, path: str) -> None:
    """Replace (or append) this JAX version's section of ``path``."""
    provenance.write_section(path, f"<!-- jit_paths jax {jax.__version__} -->",
                             f"<!-- /jit_paths jax {jax.__version__} -->", section)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="panda,solo12,talos", type=lambda s: s.split(","),
                   help="models of bench/models.py (default: panda,solo12,talos)")
    p.add_argument("--dtypes", default="float64,float32", type=lambda s: s.split(","),
                   help="default: float64,float32")
    p.add_argument("--ops", default=",".join(OPS), type=lambda s: s.split(","), help=f"default: {','.join(OPS)}")
    p.add_argument("--batch", type=int, default=4096, help="samples per call (default: 4096)")
    p.add_argument("--rollout-batch", type=int, default=256, help="initial states for rollout_grad (default: 256)")
    p.add_argument("--steps", type=int, default=100, help="rollout steps (default: 100)")
    p.add_argument("--dt", type=float, default=1e-3, help="rollout time step (default: 0.001)")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (default: 7)")
    p.add_argument("--skip", default="", type=lambda s: s.split(","), help="'pin' to leave Pinocchio out")
    p.add_argument("--out", default=os.path.join(HERE, "results.md"), help="markdown file to update")
    args = p.parse_args(argv)
    bad = [op for op in args.ops if op not in OPS]
    if bad:
        p.error(f"unknown op(s) {bad}; choose from {OPS}")
    _write(run(args), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
