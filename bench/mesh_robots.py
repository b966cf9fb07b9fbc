"""Mesh robots: Go2 with its convex mesh hulls, one step against MJX, float32, one CPU device.

sodyn: ``sd.with_ground_plane(sd.example_robot("go2").load(floating_base=True,
max_hull_vertices=cap))`` in float32, ``ContactModel.from_model`` (URDF self-collision off:
robot–ground pairs only), ``sd.step`` with zero control, dt = 2 ms.  MuJoCo/MJX: the same URDF
without meshes (``bench/models.py``'s ``_strip_urdf``) through ``mujoco.MjSpec`` with a free joint
on the base, a floor plane, and for every sodyn mesh geom an MJCF mesh asset made of the SAME hull
vertices (the padding rows dropped) on the same body at the same pose; only robot–floor contacts;
Newton with ``--mjx-iterations`` / ``--mjx-ls-iterations``, Euler, no actuators.  Both
``jax.jit(jax.vmap)`` on the same ``--batch`` states (the SRDF ``standing`` keyframe with noise on
the joints, lowered until the lowest geom sinks 0.5 mm), interleaved rounds; then sodyn's step at
several hull vertex caps (``--caps``, at ``--cap-batch``).  The tables replace the
``<!-- mesh_robots -->`` section of ``--out``::

    python bench/mesh_robots.py --quick --out /tmp/m.md   # smoke: B = 64, one round
    python bench/mesh_robots.py --watchdog 1500           # B = 4096
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import provenance  # noqa: E402
from models import _strip_urdf  # noqa: E402
from simulation import _us, _versions, compile_timed, interleaved  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn.io.meshes import DEFAULT_MAX_HULL_VERTICES  # noqa: E402
from sodyn.runtime.xla import supported_options  # noqa: E402
from sodyn.simulate import State  # noqa: E402

ROBOT = "go2"
DTYPE = jnp.float32
DT = 0.002
SINK = 5e-4  # how far the lowest geom starts below the floor, m
CAPS = (16, 32, 64, None)
START, END = "<!-- mesh_robots -->", "<!-- /mesh_robots -->"


def sodyn_model(cap):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = sd.example_robot(ROBOT).load(floating_base=True, max_hull_vertices=cap)
    return sd.with_ground_plane(m).astype(DTYPE)


def hull_vertices(model, g) -> np.ndarray:
    """A mesh geom's hull vertices without the padding rows (the first vertex repeated)."""
    v = np.asarray(model.geoms.vertices[g], np.float32)
    n = len(v)
    while n > 1 and np.array_equal(v[n - 1], v[0]):
        n -= 1
    return v[:n]


def mujoco_model(model, iterations: int, ls_iterations: int):
    """The Go2 URDF without meshes in MuJoCo with a free base and a floor; sodyn's mesh geoms as
    MJCF meshes (the same hull vertices, same body and pose), colliding with the floor only."""
    import mujoco

    urdf = sd.example_robot(ROBOT).urdf
    with open(urdf) as f:
        root = ET.fromstring(_strip_urdf(f.read()))
    children = {j.find("child").get("link") for j in root.findall("joint")}
    base = next(lk.get("name") for lk in root.findall("link") if lk.get("name") not in children)
    for e in root.findall("mujoco"):
        root.remove(e)
    ET.SubElement(ET.SubElement(root, "mujoco"), "compiler", discardvisual="true", fusestatic="false")
    spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.body(base).add_freejoint(name="root")
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], contype=0,
                            conaffinity=1)
    gm = model.geoms
    for g in range(len(gm)):
        if gm.type[g] != "mesh":
            continue
        name = gm.names[g].replace(":", "_")
        spec.add_mesh(name=name, uservert=hull_vertices(model, g).astype(np.float64).ravel().tolist())
        rot = np.asarray(gm.rotation[g], np.float64)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, rot.ravel())
        link = model.body_names[int(gm.body[g])]
        spec.body(link).add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name,
                                 pos=np.asarray(gm.translation[g], np.float64).tolist(), quat=quat.tolist(),
                                 contype=1, conaffinity=0, mass=0, density=0)
    mj = spec.compile()
    mj.opt.timestep = DT
    mj.opt.solver = int(mujoco.mjtSolver.mjSOL_NEWTON)
    mj.opt.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
    mj.opt.iterations, mj.opt.ls_iterations = iterations, ls_iterations
    return mj


def layout(model, mj):
    """Index arrays ``(qi, vi)``: MuJoCo's ``qpos[qi] = q``, ``qvel[vi] = v`` (the free joint:
    position then the (w, x, y, z) quaternion on both sides; hinges matched by name)."""
    import mujoco

    qi, vi = [], []
    for name in model.joint_names:
        if name == model.joint_names[0]:  # the free joint
            j = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, "root")
            qi += list(range(mj.jnt_qposadr[j], mj.jnt_qposadr[j] + 7))
            vi += list(range(mj.jnt_dofadr[j], mj.jnt_dofadr[j] + 6))
            continue
        j = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            raise ValueError(f"joint {name} not in the MuJoCo model")
        qi.append(int(mj.jnt_qposadr[j]))
        vi.append(int(mj.jnt_dofadr[j]))
    return np.asarray(qi), np.asarray(vi)


def states(model, batch: int, seed: int = 0):
    """``(q, v)``: the SRDF ``standing`` keyframe, ``0.02 N(0, 1)`` rad on each joint, ``0.05 N(0, 1)``
    rad/s on each joint velocity (the base at rest), lowered so the lowest geom sinks ``SINK``."""
    rng = np.random.default_rng(seed)
    k = list(model.keyframes.names).index("standing")
    q = np.tile(np.asarray(model.keyframes.q[k], np.float64), (batch, 1))
    q[:, 7:] += 0.02 * rng.standard_normal((batch, model.nq - 7))
    v = np.zeros((batch, model.nv))
    v[:, 6:] = 0.05 * rng.standard_normal((batch, model.nv - 6))
    dist = np.asarray(jax.jit(jax.vmap(lambda q: sd.collide(model, q).distance))(jnp.asarray(q, DTYPE)))
    q[:, 2] -= dist.min(axis=1) + SINK
    return jnp.asarray(q, DTYPE), jnp.asarray(v, DTYPE)


def sodyn_step(model):
    c = sd.ContactModel.from_model(model)

    def f(q, v):
        s = sd.step(model, State(q, v, jnp.zeros((), q.dtype)), None, DT, contact=c)
        return s.q, s.v

    return f, c


def mjx_options() -> dict:
    """MJX's compile options, as ``bench/collision.py``: XLA:CPU's XNNPACK runtime off."""
    return supported_options({"xla_cpu_use_xnnpack": False})


class Mjx:
    def __init__(self, mj, qi, vi):
        import mujoco
        from mujoco import mjx

        self.mjx, self.qi, self.vi = mjx, jnp.asarray(qi), jnp.asarray(vi)
        self.mx = mjx.put_model(mj)
        self.d0 = mjx.put_data(mj, mujoco.MjData(mj))
        self.ncon = int(getattr(self.d0, "_impl", self.d0).ncon)

    def step_fn(self):
        mx, d0, mjx, qi, vi = self.mx, self.d0, self.mjx, self.qi, self.vi

        def f(q, v):
            d = mjx.step(mx, d0.replace(qpos=d0.qpos.at[qi].set(q), qvel=d0.qvel.at[vi].set(v)))
            return d.qpos[qi], d.qvel[vi]

        return f


def _compile(name, fn, *a, options=None):
    c, s = compile_timed(jax.jit(jax.vmap(fn), compiler_options=options), *a)
    print(f"compiled {name}: {s:.1f} s", flush=True)
    return c, s


def check(model, contact, mj, qi, vi, q, v) -> dict:
    """MuJoCo C (float64) on the first samples against sodyn: the lowest geom distance, the
    active contacts, and one step's ``q`` (max difference)."""
    import mujoco

    d = mujoco.MjData(mj)
    out = {"mj_min": [], "sd_min": [], "mj_active": [], "dq": []}
    dist = np.asarray(jax.vmap(lambda q: sd.collide(model, q).distance)(q[:8]))
    for i in range(min(8, q.shape[0])):
        d.qpos[qi], d.qvel[vi] = np.asarray(q[i], np.float64), np.asarray(v[i], np.float64)
        mujoco.mj_forward(mj, d)
        out["mj_min"].append(min((d.contact.dist[k] for k in range(d.ncon)), default=np.inf))
        out["mj_active"].append(int(np.sum(d.contact.dist[:d.ncon] < 0)))
        out["sd_min"].append(float(dist[i].min()))
    return {k: float(np.mean(x)) for k, x in out.items() if x}


def run(args) -> str:
    b = args.batch
    model = sodyn_model(args.cap)
    q, v = states(model, b)
    f_sd, contact = sodyn_step(model)
    nverts = [len(hull_vertices(model, g)) for g in range(len(model.geoms)) if model.geoms.type[g] == "mesh"]
    fns = {"sodyn step": (f_sd, None)}
    notes, mjx = [], None
    try:
        mj = mujoco_model(model, args.mjx_iterations, args.mjx_ls_iterations)
        qi, vi = layout(model, mj)
        chk = check(model, contact, mj, qi, vi, q, v)
        print("check", chk, flush=True)
        notes.append(f"- Lowest geom distance at the inputs (mean over the first 8 samples): sodyn "
                     f"{chk['sd_min'] * 1e3:.3f} mm, MuJoCo C {chk['mj_min'] * 1e3:.3f} mm; MuJoCo C active contacts "
                     f"(dist < 0) {chk['mj_active']:.1f}.")
        mjx = Mjx(mj, qi, vi)
        fns["mjx.step"] = (mjx.step_fn(), mjx_options())
        if mjx_options():  # MJX at its best XLA setting: XNNPACK off and XLA's defaults both timed
            fns["mjx.step, XLA defaults"] = (mjx.step_fn(), None)
    except (NotImplementedError, ValueError) as e:
        notes.append(f"- MJX cannot run it: `{type(e).__name__}: {str(e)[:160]}`")
    calls, comp, outs = {}, {}, {}
    for k, (f, opts) in fns.items():
        try:
            c, comp[k] = _compile(k, f, q, v, options=opts)
        except Exception as e:
            if k == "sodyn step":
                raise
            notes.append(f"- `{k}` failed: `{type(e).__name__}: {str(e)[:160]}`")
            continue
        outs[k] = jax.tree.leaves(c(q, v))
        calls[k] = (lambda c=c: c(q, v))
    finite = {k: all(bool(np.all(np.isfinite(np.asarray(x)))) for x in outs[k]) for k in calls}
    mjx_keys = [k for k in calls if k.startswith("mjx")]
    if mjx_keys:
        dq = float(np.max(np.abs(np.asarray(outs[mjx_keys[0]][0]) - np.asarray(outs["sodyn step"][0]))))
        notes.append(f"- One step from the same states: max |q_sodyn − q_MJX| = {dq:.2e} (different contact "
                     f"models: sodyn's compliant law, MJX's soft constraints).")
    t = interleaved(calls, args.rounds, args.calls)
    print({k: (_us(w, b), _us(c, b)) for k, (w, c) in t.items()}, flush=True)
    (sw, scpu), cs = t["sodyn step"], comp["sodyn step"]
    cap = "none (full hull)" if args.cap is None else str(args.cap)
    row = (f"| {ROBOT} | {cap} | {len(nverts)} meshes, {min(nverts)}–{max(nverts)} vertices | "
           f"{contact.n_pairs} / {len(contact)} |")
    if mjx_keys:
        best = min(mjx_keys, key=lambda k: t[k][1])
        (mw, mc), cm = t[best], comp[best]
        notes.append("- MJX per XLA setting, µs / core-µs / compile s: " + "; ".join(
            f"`{k}` {_us(t[k][0], b)} / {_us(t[k][1], b)} / {comp[k]:.1f}" for k in mjx_keys)
            + f"; the table's MJX columns: `{best}` (the lower core-µs).")
        row += (f" {mjx.ncon} | {_us(sw, b)} | {_us(mw, b)} | {sw / mw:.3f} | {_us(scpu, b)} | {_us(mc, b)} | "
                f"**{scpu / mc:.3f}** | {cs:.1f} / {cm:.1f} |")
    else:
        row += f" — | {_us(sw, b)} | — | — | {_us(scpu, b)} | — | — | {cs:.1f} / — |"
    if not all(finite.values()):
        notes.append(f"- non-finite outputs on the timed batch: {finite}")
    lines = [f"### Go2 with mesh hulls, one step: sodyn vs MJX (float32, B={b}, one CPU device)\n",
             "sodyn: `sd.with_ground_plane(sd.example_robot(\"go2\").load(floating_base=True, "
             f"max_hull_vertices={args.cap}))`, `sd.step` (linearly implicit) with "
             "`contact=ContactModel.from_model(model)` (URDF self-collision off: robot–ground pairs only), zero "
             f"control, dt = {DT * 1e3:g} ms. MJX: `mjx.step` on the same URDF (meshes stripped) loaded by `MjSpec` with "
             "a free joint and a floor, each sodyn mesh geom an MJCF mesh asset of the same hull vertices at the same "
             f"body pose, robot–floor contacts only, Newton `iterations={args.mjx_iterations}`, "
             f"`ls_iterations={args.mjx_ls_iterations}`, pyramidal cone, Euler, no actuators; timed "
             f"with `{mjx_options()}` (bench/collision.py's setting) and with XLA's defaults, the better one in the "
             "table. States: the SRDF `standing` keyframe, 0.02 rad noise "
             f"on the joints, 0.05 rad/s on their velocities, lowered until the lowest geom sinks {SINK * 1e3:g} mm. "
             "Both `jax.jit(jax.vmap(f))`, timed in the same interleaved rounds; core-µs = process CPU time per "
             "sample. Slots / `ncon`: contacts computed per step. Target: sodyn / MJX ≤ 0.5 per core-µs.\n",
             "| robot | hull vertex cap | hulls | sodyn pairs / slots | MJX `ncon` | sodyn µs | MJX µs | ratio wall | "
             "sodyn core-µs | MJX core-µs | ratio core-µs | compile sodyn / MJX s |", "|" + "---|" * 12, row,
             "", *notes, ""]
    if args.caps:
        lines += caps_table(args)
    return "\n".join(lines) + "\n"


def caps_table(args) -> list[str]:
    b = args.cap_batch
    calls, comp, info = {}, {}, {}
    for cap in args.caps:
        m = sodyn_model(cap)
        q, v = states(m, b)
        f, c = sodyn_step(m)
        comp_fn, comp[cap] = _compile(f"sodyn step cap={cap}", f, q, v)
        nv = [len(hull_vertices(m, g)) for g in range(len(m.geoms)) if m.geoms.type[g] == "mesh"]
        info[cap] = (max(nv), int(np.sum(nv)), m.geoms.vertices.shape[1])
        calls[cap] = (lambda c=comp_fn, q=q, v=v: c(q, v))
    t = interleaved(calls, args.rounds, args.calls)
    print({k: (_us(w, b), _us(c, b)) for k, (w, c) in t.items()}, flush=True)
    rows = [f"| {'none (full hull)' if cap is None else cap} | {info[cap][0]} | {info[cap][1]} | {info[cap][2]} | "
            f"{_us(t[cap][0], b)} | {_us(t[cap][1], b)} | {comp[cap]:.1f} |" for cap in args.caps]
    return [f"sodyn's step against the hull vertex cap (`max_hull_vertices`; the loader's default is "
            f"{DEFAULT_MAX_HULL_VERTICES}, `None` the full hull), float32, B={b}, same states recipe and rounds; MJX "
            f"timed at cap {args.cap} only.\n",
            "| cap | most vertices in a hull | vertices, all hulls | padded V | µs | core-µs | compile s |",
            "|" + "---|" * 7, *rows, ""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=4096, help="samples of the main table (default: 4096)")
    p.add_argument("--cap", type=lambda s: None if s == "none" else int(s), default=64,
                   help="hull vertex cap of the main table, or 'none' (default: 64)")
    p.add_argument("--caps", type=lambda s: [None if x == "none" else int(x) for x in s.split(",") if x],
                   default=list(CAPS), help="caps of sodyn's sweep ('' to skip; default: 16,32,64,none)")
    p.add_argument("--cap-batch", type=int, default=4096, help="samples of the cap sweep (default: 4096)")
    p.add_argument("--mjx-iterations", type=int, default=2, help="MJX Newton iterations (default: 2)")
    p.add_argument("--mjx-ls-iterations", type=int, default=4, help="MJX line-search iterations (default: 4)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default: 5)")
    p.add_argument("--calls", type=int, default=3, help="calls per variant per round (default: 3)")
    p.add_argument("--watchdog", type=float, default=0, help="seconds after which to print the stacks and exit")
    p.add_argument("--quick", action="store_true", help="smoke test: B = 64, one round of one call")
    p.add_argument("--out", default=os.path.join(HERE, "results.md"), help="markdown file to update")
    args = p.parse_args(argv)
    if args.quick:
        args.batch, args.cap_batch, args.rounds, args.calls = 64, 64, 1, 1
    sd.use_cpu_cores(1)
    jax.config.update("jax_cpu_enable_async_dispatch", False)  # as bench/collision.py
    sd.runtime.reuse_freed_memory()
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints where a running call waits
    if args.watchdog:
        faulthandler.dump_traceback_later(args.watchdog, exit=True)
    t0, load = time.time(), os.getloadavg()[0]
    argv_s = " ".join(sys.argv[1:] if argv is None else argv)
    table = run(args)
    text = (f"## Mesh robots: sodyn vs MJX\n\n{datetime.datetime.now(datetime.UTC):%Y-%m-%d}, commit "
            f"`{provenance.commit()}`, {provenance.machine()}, load average {load:.2f}, {_versions()}; "
            f"`python bench/mesh_robots.py {argv_s}`".rstrip() + f"; {args.rounds} rounds of {args.calls} calls; "
            f"wall {(time.time() - t0) / 60:.1f} min.\n\n" + table)
    print(text, flush=True)
    provenance.write_section(args.out, START, END, text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
