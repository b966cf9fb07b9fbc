"""Throughput on a GPU (or any one JAX device), float32: sodyn against MJX in one process.

For Panda (fixed base), Solo12 and Talos (floating bases), at each ``--batches`` size, the path
a user writes, ``jax.jit(jax.vmap(f))``, for

- ``fd`` forward dynamics (MJX: ``mjx.forward`` → ``qacc``, constraints and contacts off),
- ``M`` the mass matrix, ``Minv`` its inverse, ``Lambda`` the end effector's 6 × 6
  operational-space inertia,
- ``grad_fd`` the gradient of ``Σ q̈²`` with respect to ``(q, v, τ)``,
- ``step`` one default (linearly implicit) step, 1 ms (MJX: ``mjx.step``, Newton solver with
  ``--mjx-iterations`` / ``--mjx-ls-iterations``).  Solo12 stands on four foot spheres and Talos
  on four sphere corners per sole, against the plane ``z = 0``, with PD position servos on every
  joint (MuJoCo: the same spheres, a floor plane, only sphere–plane contacts, ``<position>``
  actuators); Panda steps without contact or actuators,

with the compile time (``lower`` + ``compile``) of each program and the median time per call
over a few calls; µs per sample and samples per second.  Then ``sodyn.simulate.monte_carlo``
(Solo12 and Talos, ``--mc-steps`` steps of the same stepper, servos, contact, randomized masses
and home states) at the largest two batches, with its default host chunks and with the whole
batch in one chunk: steps × samples per second, against MJX ``step``'s from the table.
``--mc-summaries`` adds runs with other per-sample summaries, and ``--ops rollout`` times
``--mc-steps`` steps (100 if 0) from given states alone, to split Monte Carlo's time into its parts.

The tables are written to ``--out`` after every row, so a run cut short keeps what it measured;
``--deadline`` (seconds) stops starting new rows after that long.  Robot URDFs come from
``example-robot-data`` or from ``--robots`` (a copy of its ``robots`` folder)::

    python bench/gpu.py --robots .robots --out $OUT/gpu.md       # on the GPU machine
    python bench/gpu.py --batches 64,256 --mc-steps 5 --out /tmp/gpu.md   # smoke test, any machine
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import models as bm  # noqa: E402
import provenance  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.simulate import GroundContact, State, monte_carlo, position_servos, step  # noqa: E402

DTYPE = jnp.float32
DT = 1e-3
OPS = ("fd", "M", "Minv", "Lambda", "grad_fd", "step")


def _energy_summary(terms: str, batch_size: int | None = None):
    """A summary with the per-step ``terms`` (``"kinetic"``, ``"potential"`` or both) mapped over
    the steps by ``jax.lax.map`` with ``batch_size`` (``None``: one step at a time, as the
    default summary; ``0``: all steps at once, ``vmap``)."""

    def energy(model, q, v):
        return ((sd.kinetic_energy(model, q, v) if "kinetic" in terms else 0.0)
                + (sd.potential_energy(model, q) if "potential" in terms else 0.0))

    def summary(r, model):
        q, v = r.states.q, r.states.v
        if batch_size == 0:
            e = jax.vmap(lambda q, v: energy(model, q, v))(q, v)
        else:
            e = jax.lax.map(lambda qv: energy(model, *qv), (q, v), batch_size=batch_size)
        return {"energy": e, "final_q": q[-1]}

    return summary


# Monte Carlo summaries for --mc-summaries: the library's default (energy per step, one step at a
# time; base height; final q; finiteness), variants of its energy term, and the least a run can
# return
SUMMARIES = {"default": None, "final": lambda r: {"final_q": r.states.q[-1]},
             "energy": _energy_summary("kinetic potential"), "energy_vmap": _energy_summary("kinetic potential", 0),
             "energy_map10": _energy_summary("kinetic potential", 10), "kinetic": _energy_summary("kinetic"),
             "potential": _energy_summary("potential")}
MJX_OPS = {"fd": "mjx.forward", "step": "mjx.step"}
SOLO_STAND = [0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
SOLO_FEET = [(f"{leg}_FOOT", (0.0, 0.0, 0.0)) for leg in ("FL", "FR", "HL", "HR")]
TALOS_SOLES = [(f"{side}_sole_link", (x, y, 0.01)) for side in ("left", "right")
               for x in (-0.1, 0.1) for y in (-0.06, 0.06)]
RADIUS = {"solo12": 0.0175, "talos": 0.01}
SERVO = {"panda": None, "solo12": (5.0, 0.2), "talos": (200.0, 2.0)}


# ---------------------------------------------------------------------------
# models and inputs
# ---------------------------------------------------------------------------


def contact_points(name: str):
    return {"solo12": SOLO_FEET, "talos": TALOS_SOLES}.get(name)


class Robot:
    """The sodyn side of one robot: model, contact, servos, functions of one sample and a batch
    of inputs for each."""

    def __init__(self, name: str, dtype=DTYPE, rollout_steps: int = 100):
        self.name, self.dtype, self.rollout_steps = name, dtype, rollout_steps
        self.model = sd.load_urdf(bm.urdf_path(name), floating_base=bm.floating(name)).astype(dtype)
        points = contact_points(name)
        self.contact = None if points is None else GroundContact.at_frames(
            self.model, [f for f, _ in points], positions=np.array([p for _, p in points]), radius=RADIUS[name])
        gains = SERVO[name]
        joints = self.model.joint_names[1:] if bm.floating(name) else self.model.joint_names
        self.servos = None if gains is None else position_servos(self.model, joints, kp=gains[0], kv=gains[1])
        self.ee = bm.ee_frame(name)
        self._inputs: dict = {}
        self.q_home = jnp.asarray([0.0, 0.0, 0.24, 1.0, 0.0, 0.0, 0.0] + SOLO_STAND, dtype) if name == "solo12" else None

    def home(self, key):
        """A configuration near home: Solo12 standing, Talos at its neutral pose, feet 1 mm into
        the ground; Panda at a random configuration."""
        m = self.model
        if self.contact is None:
            return sd.random_configuration(m, key).astype(self.dtype)
        s = sd.simulate.home_state(m, key, noise=0.02, q=self.q_home, points=self.contact, clearance=0.0)
        return s.q.at[2].add(-1e-3)

    def inputs(self, batch: int, seed: int = 0):
        """``(q, v, u)`` for ``batch`` samples, drawn once per batch size and seed (every op of
        a batch takes the same inputs)."""
        if (batch, seed) not in self._inputs:
            self._inputs[batch, seed] = self._draw(batch, seed)
        return self._inputs[batch, seed]

    def _draw(self, batch: int, seed: int):
        keys = jax.random.split(jax.random.PRNGKey(seed), batch)
        q = jax.jit(jax.vmap(self.home))(keys)
        rng = np.random.default_rng(seed)
        v = jnp.asarray(0.05 * rng.standard_normal((batch, self.model.nv)), self.dtype)
        nu = self.model.nv if self.servos is None else len(self.servos.gear)
        u = jnp.asarray(0.1 * rng.standard_normal((batch, nu)), self.dtype)
        if self.servos is not None:  # servo targets: the start configuration's joint angles
            u = q[:, self.model.nq - nu:]
        return q, v, u

    def functions(self) -> dict:
        m, c, a, ee = self.model, self.contact, self.servos, self.ee

        def fd(q, v, tau):
            return sd.forward_dynamics(m, q, v, tau)

        def stepped(q, v, u):
            s = step(m, State(q, v, jnp.zeros((), q.dtype)), u, DT, contact=c, actuators=a)
            return s.q, s.v

        def tau_of(u):  # fd/M/... take joint forces (nv,); the servo controls are positions
            return jnp.zeros(m.nv, u.dtype) if a is not None else u

        return {
            "fd": lambda q, v, u: fd(q, v, tau_of(u)),
            "M": lambda q, v, u: sd.mass_matrix(m, q),
            "Minv": lambda q, v, u: sd.inverse_mass_matrix(m, q),
            "Lambda": lambda q, v, u: sd.operational_space_inertia(m, q, [ee]),
            "grad_fd": lambda q, v, u: jax.grad(lambda q, v, t: jnp.sum(fd(q, v, t) ** 2), argnums=(0, 1, 2))(
                q, v, tau_of(u)),
            "step": stepped,
            "rollout": lambda q, v, u: self.rollout(q, v, u, self.rollout_steps),
        }

    def rollout(self, q, v, u, steps: int):
        """Final ``(q, v)`` of ``steps`` steps holding the controls ``u``: the rollout alone, from
        a given state, without Monte Carlo's sampling, summary or chunks."""
        m, c, a = self.model, self.contact, self.servos
        r = sd.simulate.rollout(m, State(q, v, jnp.zeros((), q.dtype)), jnp.broadcast_to(u, (steps, u.shape[0])),
                                DT, steps, contact=c, actuators=a)
        return r.states.q[-1], r.states.v[-1]


def mujoco_model(name: str, iterations: int, ls_iterations: int):
    """``mujoco.MjModel`` of the robot's URDF without meshes: for Panda, constraints and contacts
    off; for Solo12 and Talos, a free joint, a floor plane, the contact spheres (only
    sphere–plane contacts) and ``<position>`` servos with the same gains on every joint."""
    points = contact_points(name)
    if points is None:
        return bm.mujoco_model(name)
    kp, kv = SERVO[name]
    return bm.mujoco_on_spheres(name, points, RADIUS[name], kp, kv, DT, iterations, ls_iterations)


class MjxRobot:
    """The MJX side: ``forward`` on the model without contacts, ``step`` on the one with them."""

    def __init__(self, name: str, iterations: int, ls_iterations: int):
        import mujoco
        from mujoco import mjx

        self.mjx = mjx
        self.smooth = bm.mujoco_model(name)
        self.sim = mujoco_model(name, iterations, ls_iterations)
        self.m_smooth, self.m_sim = mjx.put_model(self.smooth), mjx.put_model(self.sim)
        self.d_smooth, self.d_sim = mjx.make_data(self.m_smooth), mjx.make_data(self.m_sim)
        # standing start for the stepped model: the spheres' lowest point 1 mm into the floor
        d = mujoco.MjData(self.sim)
        mujoco.mj_kinematics(self.sim, d)
        spheres = self.sim.geom_type == mujoco.mjtGeom.mjGEOM_SPHERE
        if spheres.any():
            d.qpos[2] -= float(np.min(d.geom_xpos[spheres, 2] - self.sim.geom_size[spheres, 0])) + 1e-3
        self.qpos_sim = np.array(d.qpos)

    def inputs(self, op: str, batch: int, seed: int = 0):
        mjm = self.sim if op == "step" else self.smooth
        rng = np.random.default_rng(seed)
        base = self.qpos_sim if op == "step" else mjm.qpos0
        qpos = np.tile(base, (batch, 1))
        free = int(mjm.jnt_type[0] == 0) * 7  # a free joint first: keep its position and orientation
        qpos[:, free:] += 0.02 * rng.standard_normal((batch, mjm.nq - free))
        qvel = 0.05 * rng.standard_normal((batch, mjm.nv))
        last = qpos[:, free:][:, :mjm.nu] if op == "step" else 0.1 * rng.standard_normal((batch, mjm.nv))
        return tuple(jnp.asarray(x, DTYPE) for x in (qpos, qvel, last))

    def functions(self) -> dict:
        mjx, ms, mm, ds, dm = self.mjx, self.m_smooth, self.m_sim, self.d_smooth, self.d_sim

        def forward(q, v, tau):
            return mjx.forward(ms, ds.replace(qpos=q, qvel=v, qfrc_applied=tau)).qacc

        def stepped(q, v, u):
            d = mjx.step(mm, dm.replace(qpos=q, qvel=v, ctrl=u))
            return d.qpos, d.qvel

        return {"fd": forward, "step": stepped}


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


def measure(fn, args, budget_s: float = 0.4) -> tuple[float, float]:
    """``(compile seconds, median seconds per call)`` of ``jax.jit(jax.vmap(fn))``."""
    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(fn)).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(*args))
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    first = time.perf_counter() - t0
    times = [first]
    for _ in range(int(np.clip(budget_s / max(first, 1e-6), 2, 20))):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, statistics.median(times)


class Report:
    """The tables, rewritten to ``path`` after every row."""

    def __init__(self, path: str, header: list[str]):
        self.path, self.header = path, header
        self.rows: list[str] = []
        self.mc: list[str] = []
        self.notes: list[str] = []

    def write(self) -> None:
        lines = list(self.header)
        lines += ["", "| model | op | B | sodyn µs/sample | sodyn samples/s | sodyn compile s | "
                      "MJX µs/sample | MJX compile s | sodyn / MJX |", "|---|---|---|---|---|---|---|---|---|"]
        lines += self.rows
        if self.mc:
            lines += ["", "Monte Carlo (`sodyn.simulate.monte_carlo`, default stepper, contact, servos):", "",
                      "| model | B | chunk | summary | steps | run s | compile s | steps × samples / s | "
                      "MJX step, steps × samples / s | sodyn / MJX |", "|---|---|---|---|---|---|---|---|---|---|"]
            lines += self.mc
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "w") as f:
            f.write("\n".join(lines) + "\n")


def _fmt(x: float) -> str:
    return f"{x:.3g}"


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def precision(models: list[str], batch: int, path: str) -> None:
    """Float32 results against float64 on the same device, with JAX's default matmul precision
    (which may use TensorFloat-32 for float32 products on recent NVIDIA GPUs) and with
    ``jax.default_matmul_precision("highest")``: the largest error relative to the largest
    float64 magnitude, over ``batch`` samples."""
    jax.config.update("jax_enable_x64", True)
    lines = [f"Float32 against float64, {jax.devices()[0].device_kind}, B = {batch}:", "",
             "| model | op | default precision | `highest` |", "|---|---|---|---|"]
    for name in models:
        r, ref = Robot(name), Robot(name, jnp.float64).functions()
        q, v, u = r.inputs(batch)
        for op in ("fd", "Minv", "Lambda", "step"):
            want = jax.jit(jax.vmap(ref[op]))(*(x.astype(jnp.float64) for x in (q, v, u)))
            errs = []
            for prec in (None, "highest"):
                with jax.default_matmul_precision(prec):
                    got = jax.jit(jax.vmap(r.functions()[op]))(q, v, u)
                errs.append(max(float(jnp.max(jnp.abs(g - w)) / jnp.max(jnp.abs(w)))
                                for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want))))
            lines.append(f"| {name} | {op} | {errs[0]:.1e} | {errs[1]:.1e} |")
            print(lines[-1], flush=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _versions() -> str:
    out = [f"jax {jax.__version__}", f"jaxlib {jax.lib.__version__}"]
    try:
        import mujoco

        out.append(f"mujoco/mjx {mujoco.__version__}")
    except ImportError:
        out.append("no MuJoCo")
    return ", ".join(out) + f"; Python {platform.python_version()}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--robots", help="a copy of example-robot-data's robots folder")
    p.add_argument("--models", default="panda,solo12,talos")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--batches", default="1024,8192,65536")
    p.add_argument("--mc-steps", type=int, default=100, help="Monte Carlo rollout steps (0: none)")
    p.add_argument("--mc-chunks", choices=("both", "default"), default="both",
                   help="Monte Carlo with the default chunk and the whole batch as one, or the default only")
    p.add_argument("--mc-summaries", default="default", help=f"Monte Carlo summaries, of {sorted(SUMMARIES)}")
    p.add_argument("--mjx-iterations", type=int, default=2)
    p.add_argument("--mjx-ls-iterations", type=int, default=4)
    p.add_argument("--no-mjx", action="store_true")
    p.add_argument("--deadline", type=float, default=float("inf"), help="seconds after which no new row starts")
    p.add_argument("--out", default=os.path.join(HERE, "out", "gpu.md"))
    p.add_argument("--precision", action="store_true",
                   help="only compare float32 (default and highest matmul precision) with float64")
    args = p.parse_args(argv)
    if args.robots:
        os.environ["SODYN_ROBOTS_DIR"] = os.path.abspath(args.robots)
    if args.precision:
        precision(args.models.split(","), int(args.batches.split(",")[0]), args.out)
        return 0
    start = time.perf_counter()
    models = args.models.split(",")
    ops = args.ops.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    # the middle batch first (its rows' compile times are the ones to quote), then the largest,
    # Monte Carlo, and the rest
    order = sorted(batches, key=lambda b: (b != batches[len(batches) // 2], -b))
    dev = jax.devices()[0]
    report = Report(args.out, [
        f"- device: {dev.device_kind} ({dev.platform}), {len(jax.devices())} device(s); host {provenance.machine()}",
        f"- {_versions()}",
        f"- sodyn {os.environ.get('SODYN_COMMIT') or provenance.commit()}; "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- float32; `jax.jit(jax.vmap(f))`; median time per call; compile = lower + compile; "
        f"MJX Newton solver, {args.mjx_iterations} iterations, {args.mjx_ls_iterations} line-search iterations",
    ])
    use_mjx = not args.no_mjx
    if use_mjx:
        try:
            import mujoco  # noqa: F401
            from mujoco import mjx  # noqa: F401
        except ImportError as e:
            report.notes.append(f"MJX not measured: {e}")
            use_mjx = False
    robots = {n: Robot(n, rollout_steps=args.mc_steps or 100) for n in models}
    mjx_robots: dict[str, MjxRobot] = {}
    step_rate: dict[tuple[str, int], float] = {}

    def late() -> bool:
        return time.perf_counter() - start > args.deadline

    def table_row(b: int, name: str, op: str) -> None:
        r = robots[name]
        try:
            c, t = measure(r.functions()[op], r.inputs(b))
        except Exception as e:  # noqa: BLE001 - a failed row is reported, the run goes on
            report.notes.append(f"{name} {op} B={b}: sodyn failed: {type(e).__name__}: {str(e)[:300]}")
            return
        cells = ["–", "–", "–"]
        if use_mjx and op in MJX_OPS:
            try:
                if name not in mjx_robots:
                    mjx_robots[name] = MjxRobot(name, args.mjx_iterations, args.mjx_ls_iterations)
                mr = mjx_robots[name]
                mc, mt = measure(mr.functions()[op], mr.inputs(op, b))
                cells = [_fmt(mt / b * 1e6), f"{mc:.1f}", f"**{t / mt:.2f}**"]
                if op == "step":
                    step_rate[(name, b)] = b / mt
            except Exception as e:  # noqa: BLE001
                report.notes.append(f"{name} {MJX_OPS[op]} B={b}: failed: {type(e).__name__}: {str(e)[:300]}")
        report.rows.append(f"| {name} | {op} | {b} | {_fmt(t / b * 1e6)} | {b / t:.3g} | {c:.1f} | "
                           + " | ".join(cells) + " |")
        print(report.rows[-1], flush=True)

    def monte_carlo_row(name: str, b: int, chunk: int | None, summary: str) -> None:
        r = robots[name]
        targets = r.inputs(1)[2][0]
        try:
            res = monte_carlo(
                r.model, {"model.mass": sd.simulate.uniform_scale(0.9, 1.1)},
                sd.simulate.home_sampler(noise=0.02, points=r.contact, clearance=0.0, q=r.q_home),
                jnp.broadcast_to(targets, (args.mc_steps, targets.shape[0])), DT, args.mc_steps, b,
                jax.random.PRNGKey(0), chunk=chunk, progress=False, contact=r.contact, actuators=r.servos,
                summary=SUMMARIES[summary])
        except Exception as e:  # noqa: BLE001
            report.notes.append(f"Monte Carlo {name} B={b}: failed: {type(e).__name__}: {str(e)[:300]}")
            return
        run_s = res.seconds - res.compile_seconds
        rate = b * args.mc_steps / run_s
        mjx_rate = step_rate.get((name, b))
        report.mc.append(f"| {name} | {b} | {'default' if chunk is None else chunk} | {summary} | {args.mc_steps} | "
                         f"{run_s:.2f} | {res.compile_seconds:.1f} | {rate:.3g} | "
                         f"{_fmt(mjx_rate) if mjx_rate else '–'} | "
                         f"{f'**{mjx_rate / rate:.2f}**' if mjx_rate else '–'} |")
        print(report.mc[-1], flush=True)

    jobs = [(table_row, (b, name, op)) for b in order[:2] for name in models for op in ops]
    if args.mc_steps > 0:
        jobs += [(monte_carlo_row, (name, b, chunk, summary)) for name in models if robots[name].contact is not None
                 for b in sorted(batches)[-2:] for chunk in ((None, b) if args.mc_chunks == "both" else (None,))
                 for summary in args.mc_summaries.split(",")]
    jobs += [(table_row, (b, name, op)) for b in order[2:] for name in models for op in ops]
    for i, (job, job_args) in enumerate(jobs):
        if late():
            report.notes.append(f"deadline: the last {len(jobs) - i} rows, from {job_args}, not measured")
            break
        job(*job_args)
        report.write()
    report.notes.append(f"total {time.perf_counter() - start:.0f} s")
    report.write()
    print(open(args.out).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
