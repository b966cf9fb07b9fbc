"""Build bench/results.md and PNG plots from the workers' JSON lines."""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess

OP_NAMES = {"rnea": "RNEA", "M": "M (CRBA)", "Minv": "M⁻¹", "fd": "FD (ABA)", "lambda": "Λ (6D EE)",
            "lambda_composed": "Λ composed", "gradfd": "∇FD (q, τ)", "floor": "jitted q + 1"}
ROBOT_ORDER = ["panda", "solo12", "talos"]


def model_order(name: str) -> tuple[int, int]:
    """Sort key of the report's models: the robots in :data:`ROBOT_ORDER`, then chains by length."""
    return (0, ROBOT_ORDER.index(name)) if name in ROBOT_ORDER else (1, int(name[len("chain"):]))


def load(jsonl):
    recs = []
    with open(jsonl) as f:
        for line in f:
            line = line.strip()
            if line:
                recs.append(json.loads(line))
    return recs


class Index:
    def __init__(self, recs):
        self.recs = recs
        self.d = {}
        for r in recs:
            if r.get("lib") in ("meta",):
                continue
            self.d[(r.get("xla"), r["lib"], r["model"], r["op"], r["B"], r["dtype"])] = r

    def get(self, xla, lib, model, op, B, dtype, field="per_sample_us"):
        r = self.d.get((xla, lib, model, op, B, dtype))
        if r is None or r.get("status") != "ok":
            return None
        v = r.get(field)
        return v if isinstance(v, (int, float)) and math.isfinite(v) else None

    def rec(self, xla, lib, model, op, B, dtype):
        return self.d.get((xla, lib, model, op, B, dtype))

    def values(self, key):
        return sorted({k[key] for k in self.d}, key=lambda x: (str(type(x)), x))


def _fmt(x, digits=3):
    if x is None:
        return "—"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits}g}"


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def _git(root, *args):
    try:
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        return "?"


def machine_info():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except OSError:
        pass
    vers = {}
    from importlib import metadata

    for pkg in ("jax", "jaxlib", "pin", "mujoco", "mujoco-mjx", "sodyn", "numpy", "equinox"):
        try:
            vers[pkg] = metadata.version(pkg)
        except Exception:  # noqa: BLE001
            vers[pkg] = "not installed"
    return dict(cpu=cpu, cores=os.cpu_count(), mem=mem, python=platform.python_version(), versions=vers)


def malloc_env() -> dict:
    """The glibc allocator settings (``MALLOC_*`` variables) the workers inherit: they decide
    whether a large output buffer is a fresh ``mmap``, page-faulted in on every call."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("MALLOC_")}


def sodyn_commit():
    import sodyn

    root = os.path.dirname(os.path.dirname(os.path.abspath(sodyn.__file__)))
    h = _git(root, "rev-parse", "HEAD")
    dirty = _git(root, "status", "--porcelain", "--", "sodyn")
    return h, bool(dirty), dirty


TARGET_ROBOTS = ["panda", "solo12"]


def targets(ix, xla):
    rows = []  # (target, model, measured, limit, verdict, detail)

    def add(name, model, val, limit, detail):
        verdict = "n/a" if val is None else ("PASS" if val <= limit else "FAIL")
        rows.append((name, model, None if val is None else val, limit, verdict, detail))

    B = 4096
    for m in TARGET_ROBOTS:
        ratio, det = pin_comparison(ix, xla, m, "fd", B)
        add("FD B=4096 f64 ≤1.0× pin abaInParallel (best of 1/all threads)", m, ratio, 1.0, det)
    for op, label in (("M", "M ≤1.0× pin crba (a process per core)"),
                      ("Minv", "M⁻¹ ≤1.0× pin computeMinverse (a process per core)"),
                      ("rnea", "RNEA ≤1.0× pin rneaInParallel (best of 1/all threads)")):
        for m in TARGET_ROBOTS:
            ratio, det = pin_comparison(ix, xla, m, op, B)
            add(label + " (B=4096 f64)", m, ratio, 1.0, det)
    for m in TARGET_ROBOTS:
        ratio, det = pin_comparison(ix, xla, m, "lambda", B)
        if ix.get(xla, "sodyn", m, "lambda", B, "float64") is None:
            r = ix.rec(xla, "sodyn", m, "lambda", B, "float64")
            c = ix.get(xla, "sodyn", m, "lambda_composed", B, "float64")
            p = ix.get(_primary(ix), "pin-par", m, "lambda", B, "float64")
            det = (r or {}).get("status", "not measured") + f"; composed inv(J M⁻¹ Jᵀ): {_fmt(_ratio(c, p))}×"
        add("Λ B=4096 f64 ≤0.5× pin Delassus+inv (a process per core)", m, ratio, 0.5, det)
    for m in ROBOT_ORDER:
        # Per core: MJX's forward calls LAPACK, which sodyn.batch keeps on one core, while sodyn's FD
        # is split across all of them; times are compared as µs × cores used (core-µs per sample).
        s = ix.get(xla, "sodyn", m, "fd", 1024, "float32")
        p = ix.get(xla, "mjx", m, "fd", 1024, "float32")
        sc = ix.get(xla, "sodyn", m, "fd", 1024, "float32", "cores_used") or 1
        pc = ix.get(xla, "mjx", m, "fd", 1024, "float32", "cores_used") or 1
        add("FD B=1024 f32 ≤0.1× MJX per sample (core-µs: µs × cores used)", m,
            _ratio(None if s is None else s * sc, None if p is None else p * pc), 0.1,
            f"{_fmt(s)} µs on {sc} core(s) vs {_fmt(p)} µs on {pc} core(s)")
        s = ix.get(xla, "sodyn", m, "fd", 1024, "float32", "compile_s")
        p = ix.get(xla, "mjx", m, "fd", 1024, "float32", "compile_s")
        add("FD compile (B=1024 f32) ≤0.2× MJX", m, _ratio(s, p), 0.2, f"{_fmt(s)} vs {_fmt(p)} s")
    a = ix.get(xla, "sodyn", "chain8", "fd", 1024, "float64")
    b = ix.get(xla, "sodyn", "chain128", "fd", 1024, "float64")
    add("chain FD time growth N=8→128 ≤17× (B=1024 f64)", "chain", _ratio(b, a), 17.0, f"{_fmt(a)} → {_fmt(b)} µs")
    a = ix.get(xla, "sodyn", "chain8", "fd", 1024, "float64", "compile_s")
    b = ix.get(xla, "sodyn", "chain128", "fd", 1024, "float64", "compile_s")
    add("chain FD compile growth N=8→128 ≤1.5×", "chain", _ratio(b, a), 1.5, f"{_fmt(a)} → {_fmt(b)} s")
    for m in ROBOT_ORDER:
        s = ix.get(xla, "sodyn", m, "gradfd", 1024, "float64")
        p = ix.get(xla, "sodyn", m, "fd", 1024, "float64")
        add("∇FD ≤4× FD (B=1024 f64)", m, _ratio(s, p), 4.0, f"{_fmt(s)} vs {_fmt(p)} µs")
    s = ix.get(xla, "sodyn", "panda", "fd", 1, "float64", "call_us")
    floor = ix.get(xla, "sodyn", "panda", "floor", 1, "float64", "call_us")
    detail = f"{_fmt(s)} µs per call"
    if floor is not None:
        detail += f"; this machine's floor, a jitted `q + 1` in the same worker: {_fmt(floor)} µs"
    rows.append(("single call B=1 jit FD ≤20 µs (f64)", "panda", s, 20.0,
                 "n/a" if s is None else ("PASS" if s <= 20 else "FAIL"), detail))
    return rows


def pin_comparison(ix, xla, m, op, B):
    """sodyn's time over Pinocchio's at batch ``B`` (float64) and the detail text: from the paired
    (interleaved) measurement when the run made one, else from the two separate rows."""
    r = ix.rec(xla, "paired", m, op, B, "float64")
    if r is not None and r.get("status") == "ok":
        return r["ratio"], (f"{_fmt(r['per_sample_us'])} vs {_fmt(r['ref_us'])} µs"
                            f"{' (loop / cores estimate)' if r.get('estimated') else ''}; median of {r['rounds']} "
                            f"interleaved rounds, range {_fmt(r['ratio_lo'])}–{_fmt(r['ratio_hi'])}×")
    s = ix.get(xla, "sodyn", m, op, B, "float64")
    p = pin_best(ix, m, op, B)
    return _ratio(s, p), f"{_fmt(s)} vs {_fmt(p)} µs (separate measurements)"


def paired_table(ix, xla):
    """Every paired row of one XLA setting: sodyn and Pinocchio timed alternately on one batch."""
    keys = sorted((k for k in ix.d if k[0] == xla and k[1] == "paired"),
                  key=lambda k: (model_order(k[2]), k[3]))
    if not keys:
        return None
    lines = ["| model | op | B | sodyn µs/sample | Pinocchio µs/sample | reference | ratio (median) | "
             "range over rounds | separate rows' ratio |", "|---|---|---|---|---|---|---|---|---|"]
    for k in keys:
        r = ix.d[k]
        if r.get("status") != "ok":
            continue
        _, _, m, op, B, _ = k
        sep = _ratio(ix.get(xla, "sodyn", m, op, B, "float64"), pin_best(ix, m, op, B))
        ref = r.get("ref", "?") + (" (estimate)" if r.get("estimated") else "")
        lines.append(f"| {m} | {OP_NAMES.get(op, op)} | {B} | {_fmt(r['per_sample_us'])} | {_fmt(r['ref_us'])} | "
                     f"{ref} | **{_fmt(r['ratio'])}** | {_fmt(r['ratio_lo'])}–{_fmt(r['ratio_hi'])} | {_fmt(sep)} |")
    return "\n".join(lines)


def pin_best(ix, m, op, B):
    vals = [ix.get(ix.primary, lib, m, op, B, "float64") for lib in ("pin-par", "pin-par1")]
    vals = [v for v in vals if v is not None]
    return min(vals) if vals else None


def _primary(ix):
    return ix.primary


def model_table(ix, xla, model):
    ops = [o for o in ["rnea", "M", "Minv", "fd", "lambda", "lambda_composed", "gradfd"]
           if any(k[2] == model and k[3] == o and k[0] == xla for k in ix.d)]
    batches = sorted({k[4] for k in ix.d if k[2] == model and k[0] == xla and k[1] == "sodyn"})
    lines = ["| op | dtype | B | sodyn µs/sample | compile s | XLA MiB | pin loop µs | pin par µs | "
             "sodyn/pin par | MJX f32 µs | sodyn/MJX | MJX compile s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    P = ix.primary
    for op in ops:
        for dt in ("float64", "float32"):
            for B in batches:
                r = ix.rec(xla, "sodyn", model, op, B, dt)
                if r is None:
                    continue
                s = ix.get(xla, "sodyn", model, op, B, dt)
                pop = "lambda" if op == "lambda_composed" else op
                pl = ix.get(P, "pin-loop", model, pop, B, "float64")
                pp = pin_best(ix, model, pop, B)
                pr = ix.rec(P, "pin-par", model, pop, B, "float64")
                est = "*" if pr and pr.get("estimated") else ""
                mj = ix.get(xla, "mjx", model, op, B, "float32")
                mjc = ix.get(xla, "mjx", model, op, B, "float32", "compile_s")
                mem = r.get("xla_bytes")
                sval = _fmt(s) if r.get("status") == "ok" else r.get("status")
                lines.append(
                    f"| {OP_NAMES.get(op, op)} | {dt[-2:]} | {B} | {sval} | {_fmt(r.get('compile_s'))} | "
                    f"{_fmt(mem / 2**20) if mem else '—'} | {_fmt(pl)} | {_fmt(pp)}{est} | {_fmt(_ratio(s, pp))}{est} | "
                    f"{_fmt(mj)} | {_fmt(_ratio(s, mj))} | {_fmt(mjc)} |")
    return "\n".join(lines)


def write(args, jsonl):
    recs = load(jsonl)
    ix = Index(recs)
    settings = list(args.xla)
    for r in recs:
        if r.get("lib") == "meta":
            settings += r.get("xla", [])
    xlas = []
    for s in settings:
        if s.partition("=")[0] not in xlas:
            xlas.append(s.partition("=")[0])
    for k in ix.d:
        if k[0] not in xlas:
            xlas.append(k[0])
    present = [x for x in xlas if any(k[0] == x for k in ix.d)] or xlas
    ix.primary = present[0]
    flags = {}
    for s in settings:
        flags.setdefault(s.partition("=")[0], s.partition("=")[2])
    flags.setdefault("default", "")
    mi = machine_info()
    commit, dirty, dirty_files = sodyn_commit()
    meta = [r for r in recs if r.get("lib") == "meta"]
    walls = [r.get("wall_min") for r in meta if "wall_min" in r]
    wall = sum(walls) if walls else None
    argvs = [r.get("argv") for r in meta if "argv" in r]
    argv = argvs[0] if argvs else None
    out = []
    out.append("# sodyn benchmark results\n")
    out.append(f"- date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    c0 = next((r for r in meta if "sodyn_commit" in r), None)
    cs = {r["sodyn_commit"] for r in meta if "sodyn_commit" in r}
    if len(cs) > 1:
        out.append(f"- several sodyn commits were measured across invocations: {sorted(cs)}")
    if c0 and (c0["sodyn_commit"] != commit or c0["sodyn_dirty"] != dirty):
        out.append(f"- sodyn commit measured: `{c0['sodyn_commit']}` at start"
                   + (" (with uncommitted changes under sodyn/)" if c0["sodyn_dirty"] else "")
                   + f", `{commit}` at the end" + (" (dirty)" if dirty else "")
                   + " — the core changed during the run; re-run for a consistent snapshot")
    else:
        out.append(f"- sodyn commit measured: `{commit}`" + (" (with uncommitted changes under sodyn/)" if dirty else ""))
    out.append(f"- machine: {mi['cpu']}, {mi['cores']} cores, {mi['mem']} RAM, no GPU (JAX CPU backend)")
    out.append("- versions: python " + mi["python"] + ", " + ", ".join(f"{k} {v}" for k, v in mi["versions"].items()))
    if argv:
        out.append("- command: " + " then ".join("`python " + " ".join(x) + "`" for x in argvs)
                   + (f" (wall {' + '.join(f'{w:.1f}' for w in walls)} min)" if wall else ""))
    env_text = sorted({" ".join(f"`{k}={v}`" for k, v in r["malloc_env"].items()) or "glibc defaults"
                       for r in meta if "malloc_env" in r})  # runs before it was recorded: nothing
    if any(r.get("reuse_freed_memory") for r in meta):
        env_text.append("`--reuse-freed-memory`: `sodyn.runtime.reuse_freed_memory()` in every worker")
    if env_text:
        out.append("- allocator (`MALLOC_*` environment of the workers): " + "; ".join(env_text))
    out.append("- XLA settings: " + "; ".join(f"`{n}`: XLA_FLAGS=`{flags.get(n, '')}`" for n in present)
               + f". Primary (full plan): `{ix.primary}`; the others run a reduced plan.")
    out.append("")
    out.append("Method: one worker process per (XLA setting, model, library group); within it every library "
               "runs on the same machine, same inputs, same dtype and batch. sodyn: `sodyn.jit` (`jax.jit` plus "
               "sodyn's XLA:CPU compile options, which apply to that executable only); MJX: `jax.jit`. Both of "
               "`sodyn.batch(fn)` (chunks sized by `sodyn.batch` from the function's memory per sample unless `--chunk` "
               "fixes them, each row's `chunk` in raw.jsonl; split across the CPU devices of `--cores` once each "
               "gets 256 samples (a full chunk with `--chunk`); MJX: `jax.vmap`, split the same way; a function that calls LAPACK, as MJX's `forward` "
               "and M⁻¹ do, stays on one core: split across XLA:CPU devices it deadlocks; `cores_used` in raw.jsonl), "
               "and at B=1 the single call `jit(fn)` on one sample (sodyn: `sodyn.jit(fn, latency=True)`); every "
               "JAX worker sets `jax_cpu_enable_async_dispatch=False`, so single-device calls run on the calling "
               "thread (batches split across devices are not affected); inputs pre-generated, `block_until_ready`, median of adaptive repeats "
               "(each sample ≥2 ms of calls, ~budget per measurement); compile = trace+lower+compile "
               "(`.lower().compile()`) wall time; XLA MiB = `compiled.memory_analysis()` temp+argument+output. "
               "Pinocchio: Python bindings are float64 only, so float32 rows compare against Pinocchio float64. "
               "`pin loop` = per-sample Python loop, 1 thread (includes ~1 µs binding overhead per call); "
               "`pin par` = `pin.abaInParallel`/`pin.rneaInParallel` with a `ModelPool`, the faster of 1 thread and all "
               "cores (both are in raw.jsonl as `pin-par1`/`pin-par`; on a loaded 2-core machine the 2-thread "
               "OpenMP call can stall). The machine is shared with other sessions: the load average per worker is "
               "listed under Peak memory, and absolute numbers are noisy. Pinocchio "
               "4.1 has no parallel CRBA/Minverse/Delassus/derivatives: for those `pin par` is one process per core, "
               "all at once, each running the 1-thread loop over its own samples (`bench/pin_procs.py`; the cores of "
               "this machine need not run at one speed, so 1-thread loop / cores is no estimate of it); where the "
               "processes could not start it falls back to that ESTIMATE, marked `*`. MJX is float32, constraints and contacts disabled; "
               "MJX has no Λ. ∇FD = `jax.grad` of Σ q̈ w.r.t. (q, τ) (Pinocchio: `computeABADerivatives`, full "
               "Jacobians). µs are per sample (call time / B).\n")

    for xla in present:
        out.append(f"## Targets (issue 5) — XLA setting `{xla}`\n")
        out.append("| target | model | measured ratio | limit | verdict | detail |\n|---|---|---|---|---|---|")
        for name, m, val, lim, verdict, det in targets(ix, xla):
            if xla != ix.primary and val is None:
                continue
            out.append(f"| {name} | {m} | {_fmt(val)} | {lim:g} | **{verdict}** | {det} |")
        out.append("")

    for xla in present:
        table = paired_table(ix, xla)
        if table:
            out.append(f"## Paired comparisons with Pinocchio — XLA setting `{xla}`\n")
            out.append("sodyn's compiled call and Pinocchio's reference timed alternately in the same worker, on the "
                       "same batch, round after round (each sample ≥ `--paired-min-s` of calls, the order reversed "
                       "every other round); the ratio is the median of the per-round ratios, so a machine that speeds "
                       "up or slows down during the run moves both sides alike. The reference is the faster of "
                       "`abaInParallel`/`rneaInParallel` with all cores and with one, or, where Pinocchio has no "
                       "parallel version, a process per core each running its 1-thread loop, all at once (`pin-procs`). "
                       "The last column is "
                       "the ratio of the per-model tables' separate measurements, taken minutes apart.\n")
            out.append(table)
            out.append("")

    if len(present) > 1:
        out.append("## Effect of the XLA flags (same worker plan, per-sample µs; compile s in parentheses)\n")
        keys = sorted({(k[1], k[2], k[3], k[4], k[5]) for k in ix.d if k[0] == present[1]
                       and k[1] in ("sodyn", "mjx")}, key=lambda k: (k[1], k[0], k[2], k[4], k[3]))
        out.append("| lib | model | op | dtype | B | " + " | ".join(f"`{x}`" for x in present) + " |")
        out.append("|---|---|---|---|---|" + "---|" * len(present))
        for lib, m, op, B, dt in keys:
            cells = []
            for x in present:
                v = ix.get(x, lib, m, op, B, dt)
                c = ix.get(x, lib, m, op, B, dt, "compile_s")
                r = ix.rec(x, lib, m, op, B, dt)
                cells.append(f"{_fmt(v)} ({_fmt(c)})" if v is not None else (r or {}).get("status", "—"))
            out.append(f"| {lib} | {m} | {OP_NAMES.get(op, op)} | {dt} | {B} | " + " | ".join(cells) + " |")
        out.append("")

    for xla in present:
        out.append(f"## Per-model tables — XLA setting `{xla}`\n")
        models = sorted({k[2] for k in ix.d if k[0] == xla and (k[2] in ROBOT_ORDER or k[2].startswith("chain"))},
                        key=model_order)
        for m in models:
            nv = next((r.get("nv") for k, r in ix.d.items() if k[2] == m and r.get("nv")), "?")
            out.append(f"### {m} (nv={nv})\n")
            out.append(model_table(ix, xla, m))
            out.append("")

    out.append("## Peak memory (resident set, per worker process)\n")
    out.append("| XLA setting | model | worker | peak RSS MiB | load avg at start / end |\n|---|---|---|---|---|")
    for r in recs:
        if r.get("lib") == "process":
            out.append(f"| {r['xla']} | {r['model']} | {r.get('note', '')} | {_fmt(r.get('maxrss_mb'))} | "
                       f"{r.get('loadavg_start', '?')} / {r.get('loadavg_end', '?')} |")
    out.append("")
    out.append("## Agreement checks (sample 0)\n")
    for r in recs:
        if r.get("lib") == "check":
            out.append(f"- {r['model']}: {r.get('note')}: max rel err {r.get('agree_rel_err'):.2e}")
    out.append("")
    out.append("## Skipped, unavailable, errors\n")
    n = 0
    filled = {(r.get("xla"), r["lib"], r["model"]) for r in recs
              if r.get("lib") not in ("meta",) and r.get("op") != "*" and r.get("status") == "ok"}
    for r in recs:
        if r.get("op") == "*" and r.get("status") == "skipped" and (r.get("xla"), r["lib"], r["model"]) in filled:
            continue  # a later --append run filled this group
        if r.get("lib") == "meta":
            continue
        key = (r.get("xla"), r.get("lib"), r.get("model"), r.get("op"), r.get("B"), r.get("dtype"))
        if ix.d.get(key) is not r and (ix.d.get(key) or {}).get("status") == "ok":
            continue  # superseded by a later measurement (--append)
        if r.get("lib") not in ("meta", "check", "process") and r.get("status", "ok") != "ok":
            out.append(f"- [{r.get('xla')}] {r['lib']} {r['model']} {r['op']} B={r['B']} {r['dtype']}: "
                       f"{r['status']} — {r.get('note', '')}")
            n += 1
    if not n:
        out.append("- none")
    out.append("")
    pngs = []
    if not getattr(args, "no_plots", False):
        try:
            pngs = plots(ix, args.out)
        except Exception as e:  # noqa: BLE001
            out.append(f"(plots failed: {e!r})")
    for p in pngs:
        out.append(f"![{p}]({p})")
    path = os.path.join(args.out, "results.md")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", path, *pngs)
    return path


def plots(ix, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    P = ix.primary
    files = []
    ops = ["rnea", "M", "Minv", "fd", "lambda", "gradfd"]
    robots = [m for m in ROBOT_ORDER if any(k[2] == m for k in ix.d)]
    series = [("sodyn", "float64", "sodyn f64", "C0", "-o"), ("sodyn", "float32", "sodyn f32", "C0", "--s"),
              ("pin-par", "float64", "pin par (all cores; * est.)", "C1", "-o"),
              ("pin-par1", "float64", "pin par 1 thread", "C3", "--d"),
              ("pin-loop", "float64", "pin loop 1 thread", "C1", ":x"),
              ("mjx", "float32", "MJX f32", "C2", "-^")]
    if robots:
        fig, axes = plt.subplots(len(robots), len(ops), figsize=(3.2 * len(ops), 2.8 * len(robots)), squeeze=False)
        for i, m in enumerate(robots):
            for j, op in enumerate(ops):
                ax = axes[i][j]
                for lib, dt, label, c, st in series:
                    o = op
                    if lib == "sodyn" and op == "lambda" and ix.get(P, "sodyn", m, "lambda", 1, dt) is None:
                        o, label = "lambda_composed", label + " (composed)"
                    pts = [(B, ix.get(P, lib, m, o, B, dt)) for B in sorted({k[4] for k in ix.d if k[2] == m})]
                    pts = [(b, y) for b, y in pts if y is not None and b > 0]
                    if pts:
                        ax.plot(*zip(*pts), st, color=c, label=label, ms=4)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_title(f"{m}: {OP_NAMES[op]}", fontsize=9)
                ax.grid(True, which="both", alpha=0.3)
                if i == len(robots) - 1:
                    ax.set_xlabel("batch B")
                if j == 0:
                    ax.set_ylabel("µs / sample")
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"time per sample vs batch (XLA setting {P})")
        fig.tight_layout()
        fn = "plot_time_vs_batch.png"
        fig.savefig(os.path.join(outdir, fn), dpi=90)
        plt.close(fig)
        files.append(fn)
    chains = sorted({k[2] for k in ix.d if k[2].startswith("chain")}, key=model_order)
    if len(chains) > 1:
        Bc = 1024 if any(k[4] == 1024 and k[2] in chains for k in ix.d) else max(k[4] for k in ix.d if k[2] in chains)
        cops = [o for o in ops if any(k[2] in chains and k[3] == o and k[1] != "check" for k in ix.d)]
        fig, axes = plt.subplots(1, len(cops) + 1, figsize=(3.2 * (len(cops) + 1), 3.2), squeeze=False)
        for j, op in enumerate(cops):
            ax = axes[0][j]
            for lib, dt, label, c, st in series:
                o = "lambda_composed" if (lib == "sodyn" and op == "lambda" and
                                          ix.get(P, "sodyn", chains[0], "lambda", Bc, dt) is None) else op
                pts = [(int(m[5:]), ix.get(P, lib, m, o, Bc, dt)) for m in chains]
                pts = [(n, y) for n, y in pts if y is not None]
                if pts:
                    ax.plot(*zip(*pts), st, color=c, label=label, ms=4)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"chain {OP_NAMES[op]}, B={Bc}", fontsize=9)
            ax.set_xlabel("N links")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel("µs / sample")
        axes[0][0].legend(fontsize=7)
        ax = axes[0][-1]
        for lib, dt, label, c, st in series:
            if lib not in ("sodyn", "mjx"):
                continue
            for op, st2 in (("fd", st), ("gradfd", ":")):
                pts = [(int(m[5:]), ix.get(P, lib, m, op, Bc, dt, "compile_s")) for m in chains]
                pts = [(n, y) for n, y in pts if y is not None]
                if pts:
                    ax.plot(*zip(*pts), st2, color=c, label=f"{label} {op}", ms=4)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"compile time, B={Bc}", fontsize=9)
        ax.set_ylabel("s")
        ax.set_xlabel("N links")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
        fig.suptitle(f"time per sample vs chain length (XLA setting {P})")
        fig.tight_layout()
        fn = "plot_time_vs_n.png"
        fig.savefig(os.path.join(outdir, fn), dpi=90)
        plt.close(fig)
        files.append(fn)
    return files
