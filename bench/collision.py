"""Contact between bodies: sodyn against MJX, side by side in one process, float32, one CPU device.

1. ``step``: dm_control's ``humanoid.xml`` and ``quadruped.xml`` (every primitive geom; height
   fields and meshes switched off in the one ``MjModel`` both are built from), the model's
   timestep, zero control: sodyn's default step with ``ContactModel.from_model`` against
   ``mjx.step`` (Newton, ``--mjx-iterations`` / ``--mjx-ls-iterations``), both
   ``jax.jit(jax.vmap)`` on the same ``--batch`` states standing on the floor; then the pieces of
   sodyn's step (``sd.collide``, ``contact_terms``, forward dynamics; MJX's kinematics + collision)
   and ``sd.collide`` per pair type;
2. ``grad``: ``jax.grad`` of a ``--steps``-step rollout of a box pushed across the floor by a
   motor-driven sphere w.r.t. the per-step forces, against the forward rollout, at ``--grad-batch``.

Times: minimum over ``--rounds`` interleaved rounds (``bench/simulation.py``'s helpers), per
sample, wall and process CPU (core-µs).  The tables replace the ``<!-- collision -->`` section
of ``--out``::

    python bench/collision.py                          # everything (~15 min on 2 shared cores)
    python bench/collision.py --quick --out /tmp/c.md  # smoke: B = 64, one round
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import provenance  # noqa: E402
from simulation import _us, _versions, compile_timed, interleaved  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.io import from_mujoco  # noqa: E402
from sodyn.runtime.xla import supported_options  # noqa: E402
from sodyn.simulate import State, contact_terms  # noqa: E402

PARTS = ("step", "grad")
MODELS = ("humanoid", "quadruped")
DTYPE = jnp.float32
SINK = 5e-4  # how far the lowest geom of each free body starts below the floor, m
PUSH_DT, PUSH_FORCE, PUSH_TARGET = 0.002, 15.0, 0.2
PUSH_XML = """<mujoco model="push">
  <option timestep="0.002"/>
  <default><geom friction="0.5 0.005 0.0001"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="box" pos="0 0 0.05">
      <freejoint name="box"/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="1" contype="3" conaffinity="3"/>
    </body>
    <body name="pusher" pos="-0.08 0 0.05">
      <joint name="push_x" type="slide" axis="1 0 0"/>
      <geom name="pusher" type="sphere" size="0.03" mass="0.5" contype="2" conaffinity="2"/>
    </body>
  </worldbody>
  <actuator><motor name="push" joint="push_x"/></actuator>
</mujoco>"""


def mujoco_model(name: str, iterations: int, ls_iterations: int):
    """dm_control's ``name.xml`` as an ``MjModel``, height fields and meshes switched off, Newton
    with the given iterations; and the names of the geoms switched off."""
    import mujoco
    from dm_control import suite

    mj = mujoco.MjModel.from_xml_path(os.path.join(os.path.dirname(suite.__file__), f"{name}.xml"))
    off = []
    for g in range(mj.ngeom):
        if int(mj.geom_type[g]) in (int(mujoco.mjtGeom.mjGEOM_HFIELD), int(mujoco.mjtGeom.mjGEOM_MESH)):
            mj.geom_contype[g] = mj.geom_conaffinity[g] = 0
            off.append(mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g))
    mj.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON)
    mj.opt.iterations, mj.opt.ls_iterations = iterations, ls_iterations
    return mj, off


class Scene:
    """One dm_control model on both sides: sodyn model and contact, MJX model and data."""

    def __init__(self, name: str, args):
        import mujoco

        self.name, self.mujoco = name, mujoco
        self.mj, self.off = mujoco_model(name, args.mjx_iterations, args.mjx_ls_iterations)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the dropped height field, MuJoCo solver parameters
            self.model = from_mujoco(self.mj, name=name).astype(DTYPE)
        self.contact = sd.ContactModel.from_model(self.model)
        self.dt = float(self.mj.opt.timestep)
        self.types = sorted({self.model.geoms.type[g] for g in self.contact.geom1 + self.contact.geom2})

    def states(self, batch: int, seed: int = 0):
        """``(q, v)``: ``qpos0`` with ``0.05 N(0, 1)`` on every hinge (clipped to its range) and
        ``0.05 N(0, 1)`` rad/s on its velocity; free bodies upright, at rest, each lowered so its
        lowest geom is ``SINK`` below the floor (extra free bodies 1.5 m apart in x)."""
        mj, mujoco = self.mj, self.mujoco
        rng = np.random.default_rng(seed)
        q = np.tile(np.asarray(mj.qpos0, np.float64), (batch, 1))
        v = np.zeros((batch, mj.nv))
        free = []
        for j in range(mj.njnt):
            a, d = int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j])
            if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                q[:, a] += 0.05 * rng.standard_normal(batch)
                if mj.jnt_limited[j]:
                    q[:, a] = np.clip(q[:, a], *mj.jnt_range[j])
                v[:, d] = 0.05 * rng.standard_normal(batch)
            elif mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                q[:, a] += 1.5 * len(free)
                free.append((int(mj.jnt_bodyid[j]), a))
        dist = np.asarray(jax.jit(jax.vmap(lambda q: sd.collide(self.model, q).distance))(jnp.asarray(q, DTYPE)))
        names, g1, g2 = self.model.geoms.names, self.contact.slots.geom1, self.contact.slots.geom2
        geom_id = lambda g: mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, names[g])  # noqa: E731
        floor = [(i, int(mj.body_rootid[mj.geom_bodyid[geom_id(b)]])) for i, (a, b) in enumerate(zip(g1, g2))
                 if names[a] == "floor"]
        for root, adr in free:
            slots = [i for i, r in floor if r == root]
            if slots:
                q[:, adr + 2] -= dist[:, slots].min(axis=1) + SINK
        return jnp.asarray(q, DTYPE), jnp.asarray(v, DTYPE)

    def step_fn(self):
        m, c, dt = self.model, self.contact, self.dt

        def f(q, v):
            s = sd.step(m, State(q, v, jnp.zeros((), q.dtype)), None, dt, contact=c)
            return s.q, s.v

        return f

    def pieces(self) -> dict:
        m, c, dt = self.model, self.contact, self.dt
        return {"collide": lambda q, v: sd.collide(m, q).distance,
                "contact_terms": lambda q, v: contact_terms(m, c, q, v, dt)[:2],
                "forward dynamics": lambda q, v: sd.forward_dynamics(m, q, v, jnp.zeros_like(v))}


class Mjx:
    """MJX's side of a :class:`Scene` (``NotImplementedError`` from ``put_model`` for geom
    types MJX has no collision function for)."""

    def __init__(self, scene: Scene):
        import mujoco
        from mujoco import mjx
        from mujoco.mjx._src.collision_driver import geom_pairs

        self.mjx = mjx
        self.n_pairs = len(list(geom_pairs(scene.mj)))
        self.mx = mjx.put_model(scene.mj)
        self.d0 = mjx.put_data(scene.mj, mujoco.MjData(scene.mj))
        self.ncon = int(getattr(self.d0, "_impl", self.d0).ncon)

    def step_fn(self):
        mx, d0, mjx = self.mx, self.d0, self.mjx

        def f(q, v):
            d = mjx.step(mx, d0.replace(qpos=q, qvel=v))
            return d.qpos, d.qvel

        return f

    def collision_fn(self):
        mx, d0, mjx = self.mx, self.d0, self.mjx

        def f(q, v):
            d = mjx.collision(mx, mjx.kinematics(mx, d0.replace(qpos=q, qvel=v)))
            con = getattr(d, "_impl", d).contact
            return con.dist - con.includemargin

        return f


def mjx_options() -> dict:
    """MJX's compile options: XLA:CPU's XNNPACK runtime off.  On jaxlib 0.10.2 with 2 cores,
    ``jax.jit(jax.vmap(mjx.step))`` at B ≥ 128 stops returning within a few calls (the caller
    waits on the executable, every pool thread idle); with XNNPACK off a B = 1024 run returned,
    B = 4096 still hangs (bench/README.md).  sodyn's calls keep XLA's defaults."""
    return supported_options({"xla_cpu_use_xnnpack": False})


def _compile(name, fn, *a, options=None):
    c, s = compile_timed(jax.jit(jax.vmap(fn), compiler_options=options), *a)
    print(f"compiled {name}: {s:.1f} s", flush=True)
    return c, s


def _failed(e: Exception) -> str:
    return f"MJX cannot run it: `{type(e).__name__}: {str(e)[:120]}`"


def pair_types(sc: Scene, q, args) -> str:
    """``sd.collide`` of each pair type's candidate pairs alone: core-µs per sample (per pair)."""
    from sodyn.collision.pairs import candidate_pairs

    pairs = candidate_pairs(sc.model)
    calls = {}
    for key, idx in pairs.by_type(sc.model).items():
        sub = pairs.select(np.asarray(idx))
        c, _ = _compile(f"{sc.name} collide {key}", lambda q, sub=sub: sd.collide(sc.model, q, pairs=sub).distance, q)
        calls[(key, len(idx))] = (lambda c=c: c(q))
    t = interleaved(calls, args.rounds, args.calls)
    b = q.shape[0]
    return "; ".join(f"{a}–{z} ×{n}: {_us(t[((a, z), n)][1], b)} ({_us(t[((a, z), n)][1] / n, b)})"
                     for (a, z), n in calls)


def part_step(args) -> str:
    b = args.batch
    rows, shares, notes = [], [], []
    for name in args.models:
        sc = Scene(name, args)
        q, v = sc.states(b)
        fns, calls, comp, outs = {"sodyn step": sc.step_fn(), **sc.pieces()}, {}, {}, {}
        mjx, why = None, ""
        try:
            mjx = Mjx(sc)
            fns.update({"mjx.step": mjx.step_fn(), "mjx collision": mjx.collision_fn()})
        except (NotImplementedError, ValueError) as e:
            why = _failed(e)
        for k, f in fns.items():
            try:
                c, comp[k] = _compile(f"{name} {k}", f, q, v, options=mjx_options() if k.startswith("mjx") else None)
            except Exception as e:  # an MJX limit found when tracing: report it, go on
                if not k.startswith("mjx"):
                    raise
                why, mjx = _failed(e), None
                calls = {k2: c2 for k2, c2 in calls.items() if not k2.startswith("mjx")}
                break
            outs[k] = jax.tree.leaves(c(q, v))
            calls[k] = (lambda c=c: c(q, v))
        finite = {k: all(bool(np.all(np.isfinite(np.asarray(x)))) for x in outs[k]) for k in calls}
        t = interleaved(calls, args.rounds, args.calls)
        print(name, {k: (_us(w, b), _us(c, b)) for k, (w, c) in t.items()}, flush=True)
        margin = np.asarray(sc.contact.per_slot("margin", DTYPE))
        active = float(np.mean(np.sum(np.asarray(outs["collide"][0]) < margin, axis=-1)))
        types = ", ".join(sc.types) + (f"; off: {', '.join(sc.off)}" if sc.off else "")
        (sw, scpu), cs = t["sodyn step"], comp["sodyn step"]
        row = f"| {name} | {len(sc.model.geoms)} ({types}) | {sc.contact.n_pairs} / {len(sc.contact)} | {active:.1f} |"
        if mjx is not None:
            (mw, mc), cm = t["mjx.step"], comp["mjx.step"]
            m_active = float(np.mean(np.sum(np.asarray(outs["mjx collision"][0]) < 0, axis=-1)))
            rows.append(f"{row} {mjx.n_pairs} / {mjx.ncon} | {m_active:.1f} | {_us(sw, b)} | {_us(mw, b)} | "
                        f"{sw / mw:.3f} | {_us(scpu, b)} | {_us(mc, b)} | **{scpu / mc:.3f}** | {cs:.1f} / {cm:.1f} | "
                        f"{cs / cm:.2f} |")
        else:
            rows.append(f"{row} — | — | {_us(sw, b)} | — | — | {_us(scpu, b)} | — | — | {cs:.1f} / — | — |")
            notes.append(f"- {name}: {why}")
        piece = lambda k, ref=scpu: f"{_us(t[k][1], b)} ({t[k][1] / ref:.2f})"  # noqa: E731
        shares.append(f"| {name} | {_us(scpu, b)} | {piece('collide')} | {piece('contact_terms')} | "
                      f"{piece('forward dynamics')} | {' / '.join(f'{comp[k]:.1f}' for k in sc.pieces())} | "
                      f"{piece('mjx collision', t['mjx.step'][1]) if mjx is not None else '—'} |")
        if not all(finite.values()):
            notes.append(f"- {name}: non-finite outputs on the timed batch: {finite}")
        if args.pair_types:
            shares.append(f"| | `collide` by pair type, core-µs (per pair): {pair_types(sc, q, args)} | | | | | |")
    lines = [f"### One step with contact between bodies: sodyn vs MJX (dm_control models, float32, B={b}, "
             "one CPU device)\n",
             "sodyn: `sd.step` (linearly implicit), `contact=ContactModel.from_model(model)` (every candidate pair "
             "after MuJoCo's filtering; default `coupling_passes`, conjugate-gradient passes for contacts between "
             "moving bodies), zero control, dt = the model's timestep (5 ms). MJX: `mjx.step`, Newton, "
             f"`iterations={args.mjx_iterations}`, `ls_iterations={args.mjx_ls_iterations}`, the model's own "
             "pyramidal cone and Euler integrator, the same MjModel (height fields and meshes switched off in both). "
             "Both `jax.jit(jax.vmap(f))` on the same states (qpos0, 0.05 noise on the hinges and their velocities, "
             f"free bodies lowered until their lowest geom sinks {SINK * 1e3:g} mm), timed in the same rounds; "
             "core-µs = process CPU time per sample (counts XLA's intra-op threads; steadier than wall time on a "
             "shared machine). Pairs: candidate geom pairs; slots / `ncon`: contacts computed per step; active: mean "
             "slots or contacts within the margin at the inputs. Target: sodyn / MJX ≤ 0.5 per core-µs."
             + (f" MJX compiled with `{mjx_options()}` (on jaxlib 0.10.2 on this 2-core machine "
                "`jax.jit(jax.vmap(mjx.step))` stops returning within a few calls at B ≥ 128: bench/README.md); "
                "sodyn's calls use XLA's defaults." if mjx_options() else "") + "\n",
             "| model | geoms (types) | sodyn pairs / slots | sodyn active | MJX pairs / `ncon` | MJX active | "
             "sodyn µs | MJX µs | ratio wall | sodyn core-µs | MJX core-µs | ratio core-µs | compile sodyn / MJX s | "
             "compile ratio |", "|" + "---|" * 14, *rows, *([""] + notes if notes else []), "",
             "Pieces of sodyn's step alone (`jax.jit(jax.vmap)`, same inputs and rounds): core-µs per sample and, in "
             "parentheses, the share of the step's; `collide`: `sd.collide(model, q).distance` (forward kinematics + "
             "narrow phase); `contact_terms(model, contact, q, v, dt)`: kinematics with velocities, narrow phase, "
             "force law and the implicit terms (f_ext, B); forward dynamics without contact; MJX `kinematics` + "
             "`collision` against `mjx.step`.\n",
             "| model | step core-µs | collide (share) | contact_terms (share) | forward dynamics (share) | "
             "compile collide / contact_terms / FD s | MJX kinematics + collision (share) |",
             "|" + "---|" * 7, *shares]
    return "\n".join(lines) + "\n"


#: The pushing scene with the sphere–box pair frictionless (MuJoCo ``<pair condim="1">``).
PUSH_XML_FRICTIONLESS = PUSH_XML.replace(
    "</worldbody>", '</worldbody><contact><pair geom1="pusher" geom2="box" condim="1"/>'
    '<exclude body1="pusher" body2="box"/></contact>')


def push_final_x(model, contact, steps: int, xml: str = PUSH_XML) -> tuple[float, float]:
    """The box's final x from rest under ``PUSH_FORCE``: sodyn, MuJoCo C (float64)."""
    import mujoco

    q = jnp.asarray(model.q_neutral, DTYPE).at[2].add(-7e-4)
    s0 = State(q, jnp.zeros(model.nv, DTYPE), jnp.zeros((), DTYPE))
    x = jax.jit(lambda s: sd.rollout(model, s, jnp.full((steps, 1), PUSH_FORCE, DTYPE), PUSH_DT, steps,
                                     contact=contact).states.q[-1, 0])(s0)
    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    d.ctrl[:] = PUSH_FORCE
    mujoco.mj_step(mj, d, steps)
    return float(x), float(d.qpos[0])


def part_grad(args) -> str:
    b, steps = args.grad_batch, args.steps
    m = sd.load_mjcf(PUSH_XML).astype(DTYPE)
    c = sd.ContactModel.from_model(m)
    rng = np.random.default_rng(0)  # the box 0-5 mm from the pusher, sunk by its weight; forces ± 10 %
    q = np.tile(np.asarray(m.q_neutral, np.float64), (b, 1)) + np.eye(m.nq)[0] * 0.005 * rng.random((b, 1))
    q, v = jnp.asarray(q - 7e-4 * np.eye(m.nq)[2], DTYPE), jnp.zeros((b, m.nv), DTYPE)
    u = jnp.asarray(PUSH_FORCE * (1.0 + 0.1 * rng.standard_normal((b, steps, 1))), DTYPE)

    def loss(q, v, u):
        r = sd.rollout(m, State(q, v, jnp.zeros((), q.dtype)), u, PUSH_DT, steps, contact=c)
        return (r.states.q[-1, 0] - PUSH_TARGET) ** 2 + 1e-4 * jnp.sum(u**2)

    cf, sf = _compile("push forward", loss, q, v, u)
    cg, sg = _compile("push grad", jax.grad(loss, argnums=2), q, v, u)
    finite = bool(np.all(np.isfinite(np.asarray(cg(q, v, u)))))
    t = interleaved({"fwd": lambda: cf(q, v, u), "grad": lambda: cg(q, v, u)}, args.rounds, args.calls)
    (fw, fc), (gw, gc) = t["fwd"], t["grad"]
    xs, xm = push_final_x(m, c, steps)
    mf = sd.load_mjcf(PUSH_XML_FRICTIONLESS).astype(DTYPE)
    fs, fm = push_final_x(mf, sd.ContactModel.from_model(mf), steps, PUSH_XML_FRICTIONLESS)
    print("push", _us(fw, b), _us(gw, b), xs, xm, fs, fm, flush=True)
    lines = [f"### Gradient of a {steps}-step pushing rollout vs the forward rollout (float32, B={b})\n",
             f"A 1 kg box (half-size 5 cm) on the floor pushed along x by a 0.5 kg sphere (r = 3 cm) on a slide joint "
             f"driven by a motor, friction 0.5, dt = {PUSH_DT * 1e3:g} ms; `ContactModel.from_model`: {c.n_pairs} "
             f"pairs (box–floor, sphere–box), {len(c)} slots. Loss: (final box x − {PUSH_TARGET} m)² + 10⁻⁴ Σ u²; "
             f"gradient w.r.t. the motor forces `(steps, 1)` (≈ {PUSH_FORCE:g} N ± 10 %); `jax.jit(jax.vmap)`; µs per "
             "sample (one whole rollout); target ≤ 4×.\n",
             "| forward µs | gradient µs | ratio | forward core-µs | gradient core-µs | ratio core-µs | "
             "compile forward / gradient s | finite |", "|" + "---|" * 8,
             f"| {_us(fw, b)} | {_us(gw, b)} | **{gw / fw:.2f}** | {_us(fc, b)} | {_us(gc, b)} | {gc / fc:.2f} | "
             f"{sf:.1f} / {sg:.1f} | {finite} |", "",
             f"Box x after {steps} steps from rest, both bodies touching, {PUSH_FORCE:g} N: sodyn {xs:.4f} m, MuJoCo C "
             f"(float64, its own solver) {xm:.4f} m (rigid bodies, Coulomb friction "
             f"0.5 under the box: {0.5 * (PUSH_FORCE - 0.5 * 9.81) / 1.5 * (steps * PUSH_DT) ** 2:.4f} m). With the "
             f"sphere–box pair frictionless (`<pair condim=\"1\">`): sodyn {fs:.4f} m, MuJoCo {fm:.4f} m. The rest of "
             "the difference with friction is the regularized Coulomb law at the sphere–box contact: the box tilts "
             "slowly on its compliant floor contacts, its face creeps past the sphere at a fraction of the slip "
             "velocity, and the friction that creep raises presses the box down, raising the floor's friction.\n"]
    return "\n".join(lines) + "\n"


def _write(parts: dict, path: str) -> None:
    """Replace the given parts of the collision section of ``path``, keeping the others."""
    start, end = "<!-- collision -->", "<!-- /collision -->"
    old = provenance.read_section(path, start, end)
    kept = {}
    for name in PARTS:
        a, z = f"<!-- collision:{name} -->\n", f"<!-- /collision:{name} -->"
        if a in old and z in old:
            kept[name] = old[old.index(a) + len(a):old.index(z)]
    kept.update(parts)
    body = "".join(f"<!-- collision:{n} -->\n{kept[n]}<!-- /collision:{n} -->\n\n" for n in PARTS if n in kept)
    intro = ("Contact between bodies (`ContactModel`), float32, one CPU device, one process "
             "(`jax_cpu_enable_async_dispatch=False`); `python bench/collision.py`. Times are the minimum over "
             "interleaved rounds, per sample; each part's first line says where and how it ran.\n\n")
    provenance.write_section(path, start, end, f"## Contact between bodies: sodyn vs MJX\n\n{intro}{body}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default=",".join(PARTS), type=lambda s: s.split(","), help=f"default: {','.join(PARTS)}")
    p.add_argument("--models", default=",".join(MODELS), type=lambda s: s.split(","), help="dm_control suite models")
    p.add_argument("--batch", type=int, default=4096, help="samples of the step part (default: 4096)")
    p.add_argument("--mjx-iterations", type=int, default=2, help="MJX Newton iterations (default: 2)")
    p.add_argument("--mjx-ls-iterations", type=int, default=4, help="MJX line-search iterations (default: 4)")
    p.add_argument("--grad-batch", type=int, default=256, help="samples of the gradient part (default: 256)")
    p.add_argument("--steps", type=int, default=100, help="rollout steps of the gradient part (default: 100)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default: 5)")
    p.add_argument("--calls", type=int, default=3, help="calls per variant per round (default: 3)")
    p.add_argument("--no-pair-types", dest="pair_types", action="store_false",
                   help="skip timing sd.collide per pair type")
    p.add_argument("--watchdog", type=float, default=0, help="seconds after which to print the stacks and exit")
    p.add_argument("--quick", action="store_true", help="smoke test: B = 64, grad B = 8, 20 steps, one round")
    p.add_argument("--out", default=os.path.join(HERE, "results.md"), help="markdown file to update")
    args = p.parse_args(argv)
    if args.quick:
        args.batch, args.grad_batch, args.steps, args.rounds, args.calls = 64, 8, 20, 1, 1
    bad = [x for x in args.parts if x not in PARTS]
    if bad:
        p.error(f"unknown part(s) {bad}; choose from {PARTS}")
    sd.use_cpu_cores(1)
    # as bench/simulation.py: calls run on the calling thread (MJX's batched LAPACK call can hang
    # with asynchronous dispatch on jaxlib 0.10.2); --watchdog prints where a hung run waits
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    sd.runtime.reuse_freed_memory()
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints where a running call waits
    if args.watchdog:
        faulthandler.dump_traceback_later(args.watchdog, exit=True)
    t0 = time.time()
    argv_s = " ".join(sys.argv[1:] if argv is None else argv)
    funcs = {"step": part_step, "grad": part_grad}
    parts = {}
    for name in (x for x in PARTS if x in args.parts):
        load, t1 = os.getloadavg()[0], time.time()
        table = funcs[name](args)
        parts[name] = (f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d}, commit `{provenance.commit()}`, "
                       f"{provenance.machine()}, load average {load:.2f}, {_versions()}; "
                       f"`python bench/collision.py {argv_s}`".rstrip() + f"; {args.rounds} rounds of {args.calls} "
                       f"calls; part wall {(time.time() - t1) / 60:.1f} min.\n\n" + table)
        print(parts[name], flush=True)
    _write(parts, args.out)
    print(f"total wall {(time.time() - t0) / 60:.1f} min")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
