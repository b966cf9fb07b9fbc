"""Simulation benchmarks (issue 29), side by side in one process, float32, one CPU device.

Solo12 (free-flyer, 12 PD position servos ``kp = 5``, ``kv = 0.2``) standing on four foot
spheres (radius 0.0175 m) against the plane ``z = 0``, time step 1 ms:

1. ``step``: one default (linearly implicit) step with contact, and one ``"semi_implicit"``
   step, against forward dynamics alone, each under ``sodyn.jit(sodyn.batch(f))`` (chunks),
   ``sodyn.jit(jax.vmap(f))`` and plain ``jax.jit(jax.vmap(f))`` at ``--batch`` samples;
2. ``mjx``: the same step against ``mjx.step`` (the URDF without meshes loaded by MuJoCo, the
   same four spheres and a floor plane, only foot–plane contacts, the same servos as MuJoCo
   ``<position>`` actuators, Newton solver with ``--mjx-iterations`` / ``--mjx-ls-iterations``),
   ``jax.jit(jax.vmap(mjx.step))`` at ``--mjx-batch``; both on the same single CPU device, timed
   in the same rounds; besides wall time, the process CPU time per sample (core-µs, which
   counts any XLA intra-op threads); compile times; and the total normal force each settles to
   from the same standing start, against ``m g``;
3. ``grad``: ``jax.grad`` of a ``--steps``-step rollout's loss (final base height plus control
   effort) w.r.t. the controls, against the forward rollout's loss, ``sodyn.jit(sodyn.batch)``
   at ``--grad-batch`` initial states;
4. ``checkpoint``: ``jax.jit(jax.grad(loss))`` of rollouts of 100, 300 and 1000 steps
   (``--grad-batch-ckpt`` samples under ``jax.vmap``) with ``checkpoint=None``, ``≈ sqrt(steps)``
   (``--checkpoints``), and with the step's rematerialisation switched off (every intermediate
   stored): XLA temp memory (``memory_analysis().temp_size_in_bytes``), compile and run time.

Times are the minimum over ``--rounds`` interleaved rounds (each: every variant called
``--calls`` times) of the time per call divided by the batch: µs per sample.  The tables
replace the ``Simulation (issue 29)`` section of ``--out`` (``bench/results.md``)::

    python bench/simulation.py                     # everything (~10 min on 2 shared cores)
    python bench/simulation.py --quick --out /tmp/sim.md     # smoke: small batches, 1 round
    python bench/simulation.py --parts step,grad   # a subset
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import platform
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
from sodyn.simulate import GroundContact, State, position_servos, rollout, step, stepping  # noqa: E402

PARTS = ("step", "mjx", "grad", "checkpoint")
LEGS = ("FL", "FR", "HL", "HR")
RADIUS = 0.0175
STAND = [0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
Q0 = [0.0, 0.0, 0.24, 1.0, 0.0, 0.0, 0.0] + STAND
KP, KV = 5.0, 0.2
DT = 1e-3
DTYPE = jnp.float32


# ---------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------


class Solo:
    """The sodyn side: model, contact, servos and a standing batch of states."""

    def __init__(self):
        self.model = sd.load_urdf(bm.urdf_path("solo12"), floating_base=True).astype(DTYPE)
        self.contact = GroundContact.at_frames(self.model, [f"{leg}_FOOT" for leg in LEGS], radius=RADIUS)
        self.servo = position_servos(self.model, self.model.joint_names[1:], kp=KP, kv=KV)
        self.mass = float(np.sum(np.asarray(self.model.mass, np.float64)))

    def states(self, batch: int, seed: int = 0):
        """``(q, v, u)``: standing configurations with small noise (feet near or in contact),
        small velocities, the standing pose as servo targets."""
        rng = np.random.default_rng(seed)
        q = np.tile(np.asarray(Q0), (batch, 1))
        q[:, 2] = 0.22 + 0.003 * rng.standard_normal(batch)  # about the standing height
        q[:, 7:] += 0.02 * rng.standard_normal((batch, 12))
        v = 0.05 * rng.standard_normal((batch, self.model.nv))
        u = np.tile(np.asarray(STAND), (batch, 1))
        return tuple(jnp.asarray(x, DTYPE) for x in (q, v, u))

    def step_fn(self, integrator: str):
        m, c, a = self.model, self.contact, self.servo

        def f(q, v, u):
            s = step(m, State(q, v, jnp.zeros((), q.dtype)), u, DT, integrator=integrator, contact=c, actuators=a)
            return s.q, s.v

        return f

    def fd_fn(self):
        m = self.model
        return lambda q, v, tau: sd.forward_dynamics(m, q, v, tau)

    def rollout_loss(self, steps: int, checkpoint=None):
        m, c, a = self.model, self.contact, self.servo
        target = jnp.asarray(STAND, DTYPE)

        def loss(q, v, u):
            r = rollout(m, State(q, v, jnp.zeros((), q.dtype)), u, DT, steps, contact=c, actuators=a,
                        checkpoint=checkpoint)
            return r.states.q[-1, 2] + 1e-3 * jnp.sum((u - target) ** 2)

        return loss

    def settle(self, steps: int) -> dict:
        q, v, u = (x[0] for x in self.states(1))
        q = jnp.asarray(Q0, DTYPE)
        v = jnp.zeros_like(v)
        us = jnp.broadcast_to(u, (steps, 12))
        r = sd.jit(lambda q, v, us: rollout(self.model, State(q, v, jnp.zeros((), DTYPE)), us, DT, steps,
                                            contact=self.contact, actuators=self.servo))(q, v, us)
        fz = np.asarray(r.contact_force[..., 2].sum(-1), np.float64)
        return {"fz": float(fz[-1]), "fz_tail_mean": float(fz[-100:].mean()), "z": float(r.states.q[-1, 2])}


def mujoco_solo(iterations: int, ls_iterations: int):
    """``mujoco.MjModel`` of Solo12 (URDF without meshes, free joint on the base) with a floor
    plane, four foot spheres (only foot–plane contacts) and the same position servos."""
    return bm.mujoco_on_spheres("solo12", [(f"{leg}_FOOT", (0.0, 0.0, 0.0)) for leg in LEGS], RADIUS, KP, KV, DT,
                                iterations, ls_iterations)


class Mjx:
    def __init__(self, iterations: int, ls_iterations: int):
        import mujoco
        from mujoco import mjx

        self.mujoco, self.mjx = mujoco, mjx
        self.mj = mujoco_solo(iterations, ls_iterations)
        self.mx = mjx.put_model(self.mj)
        self.d0 = mjx.put_data(self.mj, mujoco.MjData(self.mj))
        self.mass = float(self.mj.body_mass.sum())

    def step_fn(self):
        mx, d0, mjx = self.mx, self.d0, self.mjx

        def f(q, v, u):
            d = mjx.step(mx, d0.replace(qpos=q, qvel=v, ctrl=u))
            return d.qpos, d.qvel

        return f

    def settle(self, steps: int) -> dict:
        mx, mjx, mujoco = self.mx, self.mjx, self.mujoco
        d = self.d0.replace(qpos=jnp.asarray(Q0, jnp.float32), ctrl=jnp.asarray(STAND, jnp.float32))
        d = jax.jit(lambda d: jax.lax.fori_loop(0, steps, lambda i, d: mjx.step(mx, d), d))(d)
        data = mjx.get_data(self.mj, d)
        # MJX's own contact forces (normal first, contact frame): `mj_contactForce` on the
        # converted data reads the wrong constraint rows under some JAX versions
        from mujoco.mjx._src.support import contact_force
        total = sum(float(contact_force(mx, d, i)[0]) for i in range(data.ncon))
        f6 = np.zeros(6)
        # MuJoCo (C, float64) from the same start, as a reference
        dc = mujoco.MjData(self.mj)
        dc.qpos[:], dc.ctrl[:] = Q0, STAND
        mujoco.mj_step(self.mj, dc, steps)
        total_c = 0.0
        for i in range(dc.ncon):
            mujoco.mj_contactForce(self.mj, dc, i, f6)
            total_c += f6[0]
        return {"fz": float(total), "z": float(data.qpos[2]), "ncon": int(data.ncon), "fz_c": float(total_c),
                "z_c": float(dc.qpos[2])}


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


def compile_timed(fn, *args):
    """``(compiled, seconds)``: lower + compile (first call for a ``sodyn.batch`` function, whose
    Python wrapper picks the chunk size when called)."""
    t0 = time.perf_counter()
    try:
        compiled = fn.lower(*args).compile()
    except AttributeError:
        jax.block_until_ready(fn(*args))
        compiled = fn
    return compiled, time.perf_counter() - t0


def interleaved(calls: dict, rounds: int, per_round: int) -> dict:
    """``name -> (min wall s per call, min process CPU s per call)`` over interleaved rounds
    (the order reversed every other round)."""
    wall = {k: math.inf for k in calls}
    cpu = {k: math.inf for k in calls}
    names = list(calls)
    for r in range(rounds):
        for k in names if r % 2 == 0 else names[::-1]:
            fn = calls[k]
            for _ in range(per_round):
                c0, t0 = time.process_time(), time.perf_counter()
                jax.block_until_ready(fn())
                wall[k] = min(wall[k], time.perf_counter() - t0)
                cpu[k] = min(cpu[k], time.process_time() - c0)
    return {k: (wall[k], cpu[k]) for k in names}


def _us(x: float, batch: int) -> str:
    return f"{x / batch * 1e6:.3g}"


# ---------------------------------------------------------------------------
# the parts
# ---------------------------------------------------------------------------


def part_step(solo: Solo, args) -> str:
    b = args.batch
    q, v, u = solo.states(b)
    tau = jnp.asarray(0.5 * np.random.default_rng(1).standard_normal((b, solo.model.nv)), DTYPE)
    fns = {"FD": (solo.fd_fn(), (q, v, tau)), "step implicit": (solo.step_fn("implicit"), (q, v, u)),
           "step semi_implicit": (solo.step_fn("semi_implicit"), (q, v, u))}
    wrappers = {"sodyn.jit(sodyn.batch)": lambda f: sd.jit(sd.batch(f, devices=None)),
                "sodyn.jit(jax.vmap)": lambda f: sd.jit(jax.vmap(f)),
                "jax.jit(jax.vmap)": lambda f: jax.jit(jax.vmap(f))}
    calls, comp = {}, {}
    for wname, wrap in wrappers.items():
        for fname, (f, a) in fns.items():
            c, s = compile_timed(wrap(f), *a)
            comp[(wname, fname)] = s
            calls[(wname, fname)] = (lambda c=c, a=a: c(*a))
            print(f"compiled {wname} {fname}: {s:.1f} s", flush=True)
    times = interleaved(calls, args.rounds, args.calls)
    lines = [f"### One step with contact vs forward dynamics alone (Solo12, float32, B={b})\n",
             "µs per sample (min over rounds); ratio to FD under the same wrapper (target: implicit ≤ 1.5×); "
             "compile s.\n",
             "| wrapper | FD µs | implicit step µs | ratio | semi_implicit step µs | ratio | compile FD / implicit / "
             "semi s |", "|" + "---|" * 7]
    for wname in wrappers:
        fd = times[(wname, "FD")][0]
        im = times[(wname, "step implicit")][0]
        se = times[(wname, "step semi_implicit")][0]
        cs = " / ".join(f"{comp[(wname, f)]:.1f}" for f in fns)
        lines.append(f"| `{wname}` | {_us(fd, b)} | {_us(im, b)} | **{im / fd:.2f}** | {_us(se, b)} | "
                     f"{se / fd:.2f} | {cs} |")
        print(wname, {f: _us(times[(wname, f)][0], b) for f in fns}, flush=True)
    if args.profile:
        lines.append("")
        lines += profile_step(solo, q, v, u, tau, args)
    return "\n".join(lines) + "\n"


def profile_step(solo: Solo, q, v, u, tau, args) -> list[str]:
    """Where a step's time goes: its pieces alone, under ``sodyn.jit(sodyn.batch)``."""
    from sodyn.simulate import actuator_forces, contact_terms, joint_forces
    from sodyn.simulate.joint_forces import JointForces

    m, c, a = solo.model, solo.contact, solo.servo
    b = q.shape[0]
    eye = jnp.zeros((m.n_bodies, 6, 6), DTYPE).at[:].set(1e-3 * jnp.eye(6, dtype=DTYPE))

    pieces = {
        "FD": (lambda q, v, t: sd.forward_dynamics(m, q, v, t), (q, v, tau)),
        "FD + added_inertia": (lambda q, v, t: sd.forward_dynamics(m, q, v, t, added_inertia=eye), (q, v, tau)),
        "contact_terms(dt)": (lambda q, v: contact_terms(m, c, q, v, DT)[:2], (q, v)),
        "contact_terms(None)": (lambda q, v: contact_terms(m, c, q, v)[0], (q, v)),
        "actuator_forces": (lambda q, v, u: actuator_forces(m, a, q, v, u)[:3], (q, v, u)),
        "joint_forces": (lambda q, v: joint_forces(m, JointForces(), q, v)[:3], (q, v)),
        "integrate": (lambda q, v: sd.integrate(m, q, v, DT), (q, v)),
        "step implicit": (solo.step_fn("implicit"), (q, v, u)),
    }
    calls = {}
    for name, (f, x) in pieces.items():
        cf, _ = compile_timed(sd.jit(sd.batch(f, devices=None)), *x)
        calls[name] = (lambda cf=cf, x=x: cf(*x))
    times = interleaved(calls, args.rounds, args.calls)
    fd = times["FD"][0]
    out = [f"Pieces of the implicit step alone (`sodyn.jit(sodyn.batch)`, B={b}), µs per sample and ratio to FD:\n",
           "| piece | µs | / FD |", "|---|---|---|"]
    for name in pieces:
        out.append(f"| {name} | {_us(times[name][0], b)} | {times[name][0] / fd:.2f} |")
    print({k: _us(t[0], b) for k, t in times.items()}, flush=True)
    return out


def part_mjx(solo: Solo, args) -> str:
    b = args.mjx_batch
    mjx = Mjx(args.mjx_iterations, args.mjx_ls_iterations)
    q, v, u = solo.states(b)
    variants = {"sodyn implicit step": sd.jit(sd.batch(solo.step_fn("implicit"), devices=None)),
                "mjx.step": jax.jit(jax.vmap(mjx.step_fn()))}
    calls, comp, outs = {}, {}, {}
    for name, fn in variants.items():
        c, s = compile_timed(fn, q, v, u)
        comp[name] = s
        outs[name] = np.asarray(c(q, v, u)[0])
        calls[name] = (lambda c=c: c(q, v, u))
        print(f"compiled {name}: {s:.1f} s", flush=True)
    finite = {k: bool(np.all(np.isfinite(o))) for k, o in outs.items()}
    times = interleaved(calls, args.rounds, args.calls)
    sw, sc = times["sodyn implicit step"]
    mw, mc = times["mjx.step"]
    print("sodyn", _us(sw, b), _us(sc, b), "mjx", _us(mw, b), _us(mc, b), flush=True)
    settle_s, settle_m = solo.settle(args.settle_steps), mjx.settle(args.settle_steps)
    mg_s, mg_m = solo.mass * 9.81, mjx.mass * 9.81
    o = mjx.mj.opt
    lines = [f"### Against MJX `step` (Solo12, 4 foot spheres on a plane, float32, B={b}, one CPU device)\n",
             f"MJX: Newton solver, `iterations={o.iterations}`, `ls_iterations={o.ls_iterations}`, "
             f"{'pyramidal' if o.cone == 0 else 'elliptic'} cone, Euler, timestep {o.timestep:g} s, only "
             "foot–plane contacts; the same servos (`<position>`-like affine actuators). sodyn: the default "
             "(linearly implicit) step, `sodyn.jit(sodyn.batch)`. Both called on the same inputs in the same "
             "rounds; wall µs per sample and process CPU µs per sample (core-µs: counts XLA's intra-op threads); "
             "target: sodyn / MJX ≤ 0.3× per core-µs.\n",
             "| | sodyn µs (wall) | MJX µs (wall) | ratio wall | sodyn core-µs | MJX core-µs | ratio core-µs | "
             "compile sodyn / MJX s | compile ratio |", "|" + "---|" * 9,
             f"| step | {_us(sw, b)} | {_us(mw, b)} | {sw / mw:.3f} | {_us(sc, b)} | {_us(mc, b)} | "
             f"**{sc / mc:.3f}** | {comp['sodyn implicit step']:.1f} / {comp['mjx.step']:.1f} | "
             f"{comp['sodyn implicit step'] / comp['mjx.step']:.3f} |",
             "",
             f"Resting total normal force after {args.settle_steps} steps ({args.settle_steps * DT:g} s) from the "
             f"standing start (base at {Q0[2]} m, targets = the standing pose), against m g:\n",
             "| simulator | m g (N) | total normal force (N) | / m g | base height (m) |", "|---|---|---|---|---|",
             f"| sodyn (float32) | {mg_s:.3f} | {settle_s['fz']:.3f} | {settle_s['fz'] / mg_s:.4f} | "
             f"{settle_s['z']:.4f} |",
             f"| MJX (float32, MJX contact forces, {settle_m['ncon']} contacts) | {mg_m:.3f} | {settle_m['fz']:.3f} | "
             f"{settle_m['fz'] / mg_m:.4f} | {settle_m['z']:.4f} |",
             f"| MuJoCo C (float64, reference) | {mg_m:.3f} | {settle_m['fz_c']:.3f} | {settle_m['fz_c'] / mg_m:.4f} | "
             f"{settle_m['z_c']:.4f} |"]
    if not all(finite.values()):
        lines.append(f"\nNon-finite outputs on the timed batch: {finite}")
    print(settle_s, settle_m, flush=True)
    return "\n".join(lines) + "\n"


def part_grad(solo: Solo, args) -> str:
    b, steps = args.grad_batch, args.steps
    q, v, u = solo.states(b)
    us = jnp.broadcast_to(u[:, None, :], (b, steps, 12))
    rows = []
    for ckpt in (None, args.grad_checkpoint):
        loss = solo.rollout_loss(steps, ckpt)
        fwd = sd.jit(sd.batch(loss, devices=None))
        grad = sd.jit(sd.batch(lambda q, v, u, loss=loss: jax.grad(loss, argnums=2)(q, v, u), devices=None))
        cf, sf = compile_timed(fwd, q, v, us)
        cg, sg = compile_timed(grad, q, v, us)
        g = np.asarray(cg(q, v, us))
        print(f"compiled rollout (checkpoint={ckpt}) fwd {sf:.1f} s grad {sg:.1f} s", flush=True)
        times = interleaved({"fwd": lambda: cf(q, v, us), "grad": lambda: cg(q, v, us)}, args.rounds, args.calls)
        rows.append((ckpt, times["fwd"][0], times["grad"][0], sf, sg, bool(np.all(np.isfinite(g)))))
    lines = [f"### Gradient of a {steps}-step rollout vs the forward rollout (Solo12 with contact, float32, B={b})\n",
             "Loss: final base height + 10⁻³ Σ (u − u_stand)²; gradient w.r.t. the controls `(steps, 12)`; "
             "`sodyn.jit(sodyn.batch)`; µs per sample (one whole rollout); target ≤ 4×.\n",
             "| checkpoint | forward µs | gradient µs | ratio | compile forward / gradient s | finite |",
             "|---|---|---|---|---|---|"]
    for ckpt, fw, gr, sf, sg, fin in rows:
        lines.append(f"| {ckpt} | {_us(fw, b)} | {_us(gr, b)} | **{gr / fw:.2f}** | {sf:.1f} / {sg:.1f} | {fin} |")
    return "\n".join(lines) + "\n"


STORED = "None, intermediates stored"


@contextlib.contextmanager
def steps_stored(on: bool):
    """Within the block (when ``on``), steps traced are not rematerialised: their reverse pass
    stores every intermediate (the comparison row of the checkpointing part)."""
    saved = stepping._rematerialised
    if on:
        stepping._rematerialised = lambda fn: fn
    try:
        yield
    finally:
        stepping._rematerialised = saved


def part_checkpoint(solo: Solo, args) -> str:
    b = args.ckpt_batch
    q, v, u = solo.states(b)
    rows = []
    for steps in args.horizons:
        us = jnp.broadcast_to(u[:, None, :], (b, steps, 12))
        choices = [STORED, None] + [max(1, round(math.sqrt(steps))) if c == "sqrt" else int(c)
                                    for c in args.checkpoints]
        calls, info = {}, {}
        for ckpt in dict.fromkeys(choices):
            loss = solo.rollout_loss(steps, None if ckpt == STORED else ckpt)
            total = lambda q, v, u, loss=loss: jnp.sum(jax.vmap(loss)(q, v, u))  # noqa: E731
            fn = jax.jit(jax.grad(total, argnums=2))
            t0 = time.perf_counter()
            with steps_stored(ckpt == STORED):
                compiled = fn.lower(q, v, us).compile()
            comp = time.perf_counter() - t0
            mem = compiled.memory_analysis()
            calls[ckpt] = (lambda c=compiled, us=us: c(q, v, us))
            info[ckpt] = (comp, mem.temp_size_in_bytes)
            print(f"steps {steps} checkpoint {ckpt}: compile {comp:.1f} s, temp {mem.temp_size_in_bytes / 2**20:.1f} MiB",
                  flush=True)
        times = interleaved(calls, args.rounds, max(1, args.calls // 2))
        base_t, base_m = times[None][0], info[None][1]
        for ckpt in calls:
            t, (comp, mem) = times[ckpt][0], info[ckpt]
            rows.append((steps, ckpt, mem, mem / base_m, t / b, t / base_t, comp))
    lines = [f"### Checkpointing: memory and time of `jax.jit(jax.grad(loss))` (Solo12 with contact, float32, "
             f"B={b} under `jax.vmap`)\n",
             "`rollout(..., checkpoint=c)`; XLA temp = `compiled.memory_analysis().temp_size_in_bytes`; time per "
             "sample of one gradient call; ratios to `checkpoint=None` (the default: each step rematerialised, "
             "keeping its state and the forward-dynamics factors) at the same horizon.  "
             f"`{STORED}`: `checkpoint=None` with the step's rematerialisation switched off, so the reverse pass "
             "stores every intermediate of every step.\n",
             "| steps | checkpoint | XLA temp MiB | memory ratio | gradient µs | time ratio | compile s |",
             "|---|---|---|---|---|---|---|"]
    for steps, ckpt, mem, mr, t, tr, comp in rows:
        lines.append(f"| {steps} | {ckpt} | {mem / 2**20:.2f} | {mr:.3f} | {t * 1e6:.4g} | {tr:.2f} | {comp:.1f} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------


def _versions() -> str:
    out = [f"python {platform.python_version()}", f"jax {jax.__version__}"]
    try:
        import mujoco

        out.append(f"mujoco/mjx {mujoco.__version__}")
    except ImportError:
        pass
    return ", ".join(out)


INTRO = ("Solo12 (free-flyer, 12 position servos kp = 5, kv = 0.2), four foot spheres r = 0.0175 m on the plane "
         "z = 0, dt = 1 ms, float32, every variant on one CPU device in one process "
         "(`jax_cpu_enable_async_dispatch=False`); times are the minimum over interleaved rounds, per sample. "
         "Each table is rewritten by its own run (`--parts`); its first line says which. The machine is shared: "
         "the load average at the start of the part is given.\n\n")


def _write(parts: dict, path: str) -> None:
    """Replace the given parts (``name -> markdown``) of the simulation section of ``path``, keeping
    the other parts' tables from earlier runs."""
    start, end = "<!-- simulation -->", "<!-- /simulation -->"
    old = provenance.read_section(path, start, end)
    kept = {}
    for name in PARTS:
        a, b = f"<!-- simulation:{name} -->\n", f"<!-- /simulation:{name} -->"
        if a in old and b in old:
            kept[name] = old[old.index(a) + len(a):old.index(b)]
    kept.update(parts)
    body = "".join(f"<!-- simulation:{n} -->\n{kept[n]}<!-- /simulation:{n} -->\n\n" for n in PARTS if n in kept)
    provenance.write_section(path, start, end, f"## Simulation (issue 29)\n\n{INTRO}{body}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default=",".join(PARTS), type=lambda s: s.split(","), help=f"default: {','.join(PARTS)}")
    p.add_argument("--batch", type=int, default=4096, help="samples of the step vs FD comparison (default: 4096)")
    p.add_argument("--mjx-batch", type=int, default=4096, help="samples of the MJX comparison (default: 4096)")
    p.add_argument("--mjx-iterations", type=int, default=2, help="MJX solver iterations (default: 2)")
    p.add_argument("--mjx-ls-iterations", type=int, default=4, help="MJX line-search iterations (default: 4)")
    p.add_argument("--settle-steps", type=int, default=2000, help="steps before reading the resting force")
    p.add_argument("--grad-batch", type=int, default=256, help="initial states of the rollout gradient (default: 256)")
    p.add_argument("--steps", type=int, default=100, help="rollout steps of the gradient part (default: 100)")
    p.add_argument("--grad-checkpoint", type=int, default=10, help="checkpoint of the gradient part's 2nd row")
    p.add_argument("--ckpt-batch", type=int, default=32, help="samples of the checkpointing part (default: 32)")
    p.add_argument("--horizons", default="100,300,1000", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--checkpoints", default="sqrt", type=lambda s: s.split(","),
                   help="checkpoint segments besides None in the checkpointing part: 'sqrt' (round(sqrt(steps))) "
                        "and/or integers (default: sqrt)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default: 5)")
    p.add_argument("--calls", type=int, default=3, help="calls per variant per round (default: 3)")
    p.add_argument("--profile", action="store_true", help="also time the pieces of the implicit step")
    p.add_argument("--watchdog", type=float, default=0, help="seconds after which to print the stacks and exit")
    p.add_argument("--quick", action="store_true", help="smoke test: tiny batches and horizons, one round")
    p.add_argument("--out", default=os.path.join(HERE, "results.md"), help="markdown file to update")
    args = p.parse_args(argv)
    if args.quick:
        args.batch, args.mjx_batch, args.grad_batch, args.ckpt_batch = 64, 16, 8, 2
        args.steps, args.horizons, args.settle_steps, args.rounds, args.calls = 10, [20, 40], 200, 1, 1
    bad = [x for x in args.parts if x not in PARTS]
    if bad:
        p.error(f"unknown part(s) {bad}; choose from {PARTS}")
    # as bench/run.py's workers: single-device calls run on the calling thread.  MJX's batched step
    # (LAPACK Cholesky of its Newton solver) at B = 4096, called between sodyn calls, sometimes never
    # returns on a 2-core machine (threads asleep; jaxlib 0.10.2): always with asynchronous dispatch,
    # still in 2 of 4 runs without it.  --watchdog prints the stack and exits instead of waiting.
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    sd.runtime.reuse_freed_memory()
    if args.watchdog:
        import faulthandler

        faulthandler.dump_traceback_later(args.watchdog, exit=True)  # a hang prints where it is
    t0 = time.time()
    solo = Solo()
    funcs = {"step": part_step, "mjx": part_mjx, "grad": part_grad, "checkpoint": part_checkpoint}
    argv_s = " ".join(sys.argv[1:] if argv is None else argv)
    parts = {}
    for name in (x for x in PARTS if x in args.parts):
        load, t1 = os.getloadavg()[0], time.time()
        table = funcs[name](solo, args)
        parts[name] = (f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d}, commit `{provenance.commit()}`, "
                       f"{provenance.machine()}, load average {load:.2f}, {_versions()}; "
                       f"`python bench/simulation.py {argv_s}`".replace(" `", " `", 1).rstrip()
                       + f"; {args.rounds} rounds of {args.calls} calls; part wall {(time.time() - t1) / 60:.1f} "
                       f"min.\n\n" + table)
        print(parts[name], flush=True)
    _write(parts, args.out)
    print(f"total wall {(time.time() - t0) / 60:.1f} min")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
