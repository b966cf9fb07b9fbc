"""Two revisions of sodyn side by side: the same operations timed at a base and a head revision.

Shows whether a refactor slows anything down (rows with head/base > 1.1 are flagged).  Each revision
runs in its own worker sub-process with ``PYTHONPATH`` at its tree, so ``import sodyn`` picks that
version; the measuring code (this file, ``gpu.Robot``'s models, contacts, servos and inputs,
``harness._compile_call`` and ``harness.Timer``) is this checkout's for both.  Per model the two
workers compile each configuration at the same time (so both compile under the same load), then are
timed alternately, configuration by configuration (base, head; the order swapped every other one),
for ``--rounds`` rounds; a time is the minimum over rounds of ``harness.Timer``'s median, in µs per
sample (call / B), so machine noise hits both alike.

Operations (``gpu.Robot``): ``fd`` forward dynamics, ``rnea`` inverse dynamics, ``M``, ``Minv``
(``sodyn.inverse_mass_matrix``), ``Lambda`` (``operational_space_inertia`` of ``models.ee_frame``)
in float64, and ``step`` (one default step, 1 ms, PD servos; Solo12 on four foot spheres, Talos on four
spheres per sole; Panda without contact) in float64 and float32, for Panda, Solo12 and Talos.
Wrappers: ``jax.jit(jax.vmap(f))`` and ``sodyn.jit(sodyn.batch(f))``; at B = 1 ``jax.jit(f)`` and
``sodyn.jit(f, latency=True)``.  Workers run ``sodyn.use_cpu_cores()`` (all cores), as ``run.py``::

    python bench/compare_commits.py --base 5e904da             # vs the working tree (est. 10–15 min idle)
    python bench/compare_commits.py --base 5e904da --head HEAD --models talos --ops Minv,fd
    python bench/compare_commits.py --base 5e904da --quick     # smoke: Panda, B = 1 and 64, one round

A revision is checked out once with ``git worktree add --detach /tmp/sodyn-{base,head}-<rev> <rev>``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPS = ("fd", "rnea", "M", "Minv", "Lambda", "step")
WRAPPERS = ("jax", "sodyn")
LABEL = {("jax", False): "jax.jit(vmap)", ("jax", True): "jax.jit", ("sodyn", False): "sodyn.jit(batch)",
         ("sodyn", True): "sodyn.jit(latency)"}


def csv(s):
    return [x for x in s.split(",") if x]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", help="base revision (required)")
    p.add_argument("--head", default=".", help="head: '.' = the working tree at the repo root (default), or a revision")
    p.add_argument("--models", type=csv, default=["panda", "solo12", "talos"])
    p.add_argument("--ops", type=csv, default=list(OPS), help=",".join(OPS))
    p.add_argument("--wrappers", type=csv, default=list(WRAPPERS), help="jax,sodyn")
    p.add_argument("--batches", type=lambda s: [int(x) for x in csv(s)], default=[1, 1024])
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (minimum over them)")
    p.add_argument("--budget-s", type=float, default=0.2, help="seconds per measurement (harness.Timer)")
    p.add_argument("--max-reps", type=int, default=20)
    p.add_argument("--threshold", type=float, default=1.1, help="flag rows with head/base above this")
    p.add_argument("--timeout-s", type=float, default=600.0, help="a worker's longest answer before it is killed")
    p.add_argument("--quick", action="store_true", help="smoke run: Panda, B = 1 and 64, one round (< 3 min)")
    p.add_argument("--out", default=os.path.join(HERE, "compare_commits.md"))
    p.add_argument("--worker", help=argparse.SUPPRESS)  # internal: the model this worker serves
    a = p.parse_args(argv)
    if a.quick:
        a.models, a.batches, a.rounds, a.budget_s = ["panda"], [1, 64], 1, 0.1
    if not a.worker and not a.base:
        p.error("--base is required")
    return a


# ----------------------------------------------------------------------------- worker


def worker_main(a):
    """Serve one model: JSON commands on stdin, one JSON answer line each on the saved stdout (anything
    else the libraries print goes to stderr)."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import sodyn as sd  # this tree's (PYTHONPATH); before gpu.py, which puts the repo root on sys.path

    sd.use_cpu_cores()
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    sys.path.insert(0, HERE)
    import gpu
    import harness
    import provenance

    robots, compiled = {}, {}

    def robot(dtype):
        if dtype not in robots:
            robots[dtype] = gpu.Robot(a.worker, jnp.dtype(dtype).type)
        return robots[dtype]

    def checksum(tree):
        return float(sum(np.abs(np.asarray(x, np.float64)).sum() for x in jax.tree_util.tree_leaves(tree)))

    def compile_one(key):
        op, wrapper, B, dtype = key
        r = robot(dtype)
        fns = r.functions()
        fns["rnea"] = lambda q, v, u: sd.inverse_dynamics(r.model, q, v, v)  # a = v: any acceleration will do
        fn = fns[op]
        if wrapper == "sodyn" and not hasattr(sd, "batch"):
            return {"status": "n/a", "note": "no sodyn.batch at this revision"}
        args = r.inputs(B)
        batched = jax.vmap(fn) if wrapper == "jax" else sd.batch(fn)
        t0 = time.perf_counter()
        c, call_args = harness._compile_call(batched, fn, B, args, None if wrapper == "jax" else sd.jit)
        tc = time.perf_counter() - t0
        out = jax.block_until_ready(c(*call_args))
        compiled[tuple(key)] = (c, call_args)
        return {"status": "ok", "compile_s": tc, "out": checksum(out), "inputs": checksum(args)}

    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["cmd"] == "hello":
                import jaxlib

                ans = {"sodyn": sd.__file__, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                       "python": sys.version.split()[0], "machine": provenance.machine()}
            elif cmd["cmd"] == "compile":
                ans = compile_one(cmd["key"])
            else:  # time
                c, call_args = compiled[tuple(cmd["key"])]
                t, reps = harness.Timer(cmd["budget_s"], cmd["max_reps"])(lambda: jax.block_until_ready(c(*call_args)))
                ans = {"status": "ok", "us": t / cmd["key"][2] * 1e6, "reps": reps}
        except Exception as e:  # noqa: BLE001 - reported in the row
            ans = {"status": "error", "note": f"{type(e).__name__}: {e}".splitlines()[0][:160]}
        proto.write(json.dumps(ans) + "\n")


# ----------------------------------------------------------------------------- orchestrator


def git(*args) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()


def tree_of(rev: str, role: str) -> tuple[str, str]:
    """``(path, description)`` of a revision's tree: the working tree for '.', else a detached worktree
    ``/tmp/sodyn-<role>-<rev>`` (added once; an existing one must be at that commit)."""
    if rev == ".":
        import provenance

        return ROOT, f"working tree ({provenance.commit()})"
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = f"/tmp/sodyn-{role}-{rev if sha.startswith(rev) else sha[:9]}"  # HEAD, a branch: by commit
    if not os.path.isdir(path):
        git("worktree", "add", "--detach", path, sha)
    at = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if at != sha:
        raise SystemExit(f"{path} is at {at[:9] or '?'}, not {rev} ({sha[:9]}): remove it or move it there")
    subject = git("log", "-1", "--format=%s", sha)
    return path, f"{sha[:9]} {subject if len(subject) <= 70 else subject[:69] + '…'}"


class Worker:
    def __init__(self, a, model: str, tree: str, role: str):
        self.role, self.timeout = role, a.timeout_s
        self.log = os.path.join(tempfile.gettempdir(), f"compare_commits.{role}.{model}.log")  # its stderr
        env = dict(os.environ, PYTHONPATH=tree, PYTHONUNBUFFERED="1")
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", model], env=env, cwd=tree,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True)

    def send(self, **cmd):
        if self.p.poll() is None:
            self.p.stdin.write(json.dumps(cmd) + "\n")
            self.p.stdin.flush()

    def recv(self) -> dict:
        if self.p.poll() is None and select.select([self.p.stdout], [], [], self.timeout)[0]:
            line = self.p.stdout.readline()
            if line:
                return json.loads(line)
        self.close()
        tail = open(self.log).read().strip().splitlines()[-1:] or ["?"]
        return {"status": "error", "note": f"{self.role} worker gone or timed out: {tail[0][:140]}"}

    def ask(self, **cmd) -> dict:
        self.send(**cmd)
        return self.recv()

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def configs(a):
    return [(op, w, B, dt) for op in a.ops for dt in (("float64", "float32") if op == "step" else ("float64",))
            for B in a.batches for w in a.wrappers]


def run_model(a, model, trees, meta):
    """Rows of one model: compile every configuration in both workers at once, then time them in
    interleaved rounds."""
    ws = {role: Worker(a, model, tree, role) for role, tree in trees.items()}
    for role, w in ws.items():
        hello = w.ask(cmd="hello")
        if hello.get("status") == "error" or not hello["sodyn"].startswith(trees[role]):
            for x in ws.values():
                x.close()
            note = hello.get("note") or f"imported {hello['sodyn']}"
            print(f"{model}: {role} worker failed: {note}", flush=True)
            return [dict(key=(op, *rest), error=f"{role}: {note}") for op, *rest in configs(a)]
        meta.setdefault("hello", hello)
    rows = []
    for key in configs(a):
        for w in ws.values():
            w.send(cmd="compile", key=key)
        res = {role: w.recv() for role, w in ws.items()}
        rows.append(dict(key=key, res=res, us={role: [] for role in ws}))
        print(f"  compiled {model} {key}: " + ", ".join(
            f"{r} {x['compile_s']:.1f} s" if x["status"] == "ok" else f"{r} {x['status']}" for r, x in res.items()),
            flush=True)
    for rnd in range(a.rounds):
        for i, row in enumerate(rows):
            if any(x["status"] != "ok" for x in row["res"].values()):
                continue
            for role in (("base", "head") if (rnd + i) % 2 == 0 else ("head", "base")):
                ans = ws[role].ask(cmd="time", key=row["key"], budget_s=a.budget_s, max_reps=a.max_reps)
                if ans["status"] == "ok":
                    row["us"][role].append(ans["us"])
                else:
                    row["res"][role] = ans
        print(f"  {model}: round {rnd + 1}/{a.rounds} done", flush=True)
    for w in ws.values():
        w.send(cmd="quit")
        w.close()
    return rows


def fmt(x, spec=".3g"):
    return "–" if x is None else format(x, spec)


def table(a, model, rows) -> tuple[str, list[float]]:
    head = ("| op | wrapper | B | dtype | base µs | head µs | head/base | base compile s | head compile s | note |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n")
    lines, ratios = [], []
    for row in rows:
        op, w, B, dt = row["key"]
        wrapper = LABEL[w, B == 1]
        if "error" in row:
            lines.append(f"| {op} | {wrapper} | {B} | {dt} | – | – | – | – | – | {row['error']} |")
            continue
        res, us = row["res"], row["us"]
        best = {r: min(us[r]) if us[r] and res[r]["status"] == "ok" else None for r in res}
        cs = {r: res[r].get("compile_s") for r in res}
        notes = [f"{r}: {res[r]['status']} {res[r].get('note', '')}".strip() for r in res if res[r]["status"] != "ok"]
        ratio = best["head"] / best["base"] if best["base"] and best["head"] else None
        if ratio is not None:
            ratios.append(ratio)
        o = {r: res[r].get("out") for r in res}
        if None not in o.values() and abs(o["head"] - o["base"]) > (1e-8 if dt == "float64" else 1e-3) * (1 + abs(o["base"])):
            notes.append(f"outputs differ: Σ|out| {o['base']:.6g} vs {o['head']:.6g}")
        if res["base"].get("inputs") not in (None, res["head"].get("inputs")):
            notes.append("inputs differ")
        if op == "step" and model == "panda":
            notes.append("no contact (fixed base)")
        r_txt = "–" if ratio is None else (f"**{ratio:.3f}** ⚠" if ratio > a.threshold else f"{ratio:.3f}")
        lines.append(f"| {op} | {wrapper} | {B} | {dt} | {fmt(best['base'])} | {fmt(best['head'])} | {r_txt} | "
                     f"{fmt(cs['base'], '.2f')} | {fmt(cs['head'], '.2f')} | {'; '.join(notes)} |")
    return head + "\n".join(lines) + "\n", ratios


def main(argv=None):
    a = parse_args(argv)
    if a.worker:
        return worker_main(a)
    t0 = time.time()
    (base, base_desc), (head, head_desc) = tree_of(a.base, "base"), tree_of(a.head, "head")
    trees = {"base": base, "head": head}
    print(f"base {base_desc} at {base}\nhead {head_desc} at {head}", flush=True)
    meta, sections, all_ratios = {}, [], []
    for model in a.models:
        print(f"== {model} [{(time.time() - t0) / 60:.1f} min]", flush=True)
        text, ratios = table(a, model, run_model(a, model, trees, meta))
        sections.append(f"## {model}\n\n{text}")
        all_ratios += ratios
    h = meta.get("hello", {})
    flagged = sum(r > a.threshold for r in all_ratios)
    gm = 2 ** (sum(math.log2(r) for r in all_ratios) / len(all_ratios)) if all_ratios else None
    doc = (f"# sodyn: head vs base, {time.strftime('%Y-%m-%d %H:%M')}\n\n"
           f"- base: {base_desc}\n- head: {head_desc}\n"
           f"- jax {h.get('jax', '?')}, jaxlib {h.get('jaxlib', '?')}, Python {h.get('python', '?')}; "
           f"{h.get('machine', '?')}\n"
           f"- command: `{' '.join(sys.argv)}`; {a.rounds} round(s), {a.budget_s} s per measurement; "
           f"{(time.time() - t0) / 60:.1f} min\n"
           f"- µs per sample (call / B), minimum over interleaved rounds; compile: `lower` + `compile`, both "
           f"workers compiling the same configuration at once\n"
           f"- **{flagged} of {len(all_ratios)} rows above {a.threshold}×** (flagged ⚠); geometric mean head/base "
           f"{fmt(gm, '.3f')}\n\n" + "\n".join(sections))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(doc)
    print("\n" + doc)
    print(f"written to {a.out}")


if __name__ == "__main__":
    main()
