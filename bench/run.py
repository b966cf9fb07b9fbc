#!/usr/bin/env python
"""sodyn benchmark harness: sodyn vs Pinocchio vs MJX, in one process per XLA flag setting.

    python bench/run.py                 # full run (~20 min on 2 cores), writes bench/results.md + plots
    python bench/run.py --quick         # tiny smoke configuration (chain8, B=2, float64, sodyn + pin)
    python bench/run.py --models panda --batches 1,1024 --dtypes float64 --peers pin,mjx --xla default

See bench/README.md.  The orchestrator spawns one worker sub-process per (XLA setting, model,
library group) so that XLA_FLAGS is set before ``import jax`` and a hang or crash costs only
that group; workers append JSON lines to ``<out>/raw.jsonl`` and the report is built from it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ROBOTS = ["panda", "solo12", "talos"]
CHAINS = [f"chain{n}" for n in (8, 16, 32, 64, 128, 256)]
DEFAULT_XLA = ["default="]


def csv(s):
    return [x for x in s.split(",") if x]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny configuration for smoke tests")
    p.add_argument("--models", type=csv, default=ROBOTS + CHAINS,
                   help="comma list of panda,solo12,talos,chainN (default: all robots + chains 8..256)")
    p.add_argument("--batches", type=lambda s: [int(x) for x in csv(s)], default=[1, 64, 1024, 4096],
                   help="batch sizes for robots")
    p.add_argument("--chain-batches", type=lambda s: [int(x) for x in csv(s)], default=[1, 1024, 4096],
                   help="batch sizes for chains")
    p.add_argument("--dtypes", type=csv, default=["float64", "float32"])
    p.add_argument("--chain-dtypes", type=csv, default=["float64"],
                   help="dtypes for chains (default float64 only, to keep the full run ~20 min)")
    p.add_argument("--chain-ops", type=csv, default=["rnea", "M", "Minv", "fd", "gradfd"],
                   help="ops for chains (intersected with --ops)")
    p.add_argument("--mjx-grad-models", type=csv, default=["panda", "solo12"],
                   help="models for which MJX's gradient is compiled (it takes ~45 s+ per model)")
    p.add_argument("--ops", type=csv, default=["rnea", "M", "Minv", "fd", "lambda", "gradfd"])
    p.add_argument("--peers", type=csv, default=["pin", "mjx"], help="pin,mjx (sodyn is always run)")
    p.add_argument("--xla", action="append", default=None, metavar="NAME=FLAGS",
                   help="XLA flag setting, repeatable (default: default=, XLA's defaults)")
    p.add_argument("--secondary-models", type=csv, default=["panda"],
                   help="models run under the 2nd and later XLA settings (reduced plan)")
    p.add_argument("--secondary-ops", type=csv, default=["fd", "M", "gradfd"])
    p.add_argument("--secondary-batches", type=lambda s: [int(x) for x in csv(s)], default=[1, 1024])
    p.add_argument("--secondary-mjx-timeout", type=float, default=300.0,
                   help="worker timeout for MJX under non-primary XLA settings (can be pathologically slow)")
    p.add_argument("--mjx-chain-max-n", type=int, default=32,
                   help="MJX on chains only up to this N, FD only (MJX compile took 67-113 s per op at N=32)")
    p.add_argument("--mjx-all-batches", action="store_true",
                   help="MJX at every batch for every op (default: FD at every batch, other ops at B=1024)")
    p.add_argument("--grad-batches", type=lambda s: [int(x) for x in csv(s)], default=[1, 1024],
                   help="batches at which gradients are measured (each is a separate, slow compile)")
    p.add_argument("--cores", type=int, default=0,
                   help="CPU cores for sodyn and MJX batches (sodyn.use_cpu_cores; default 0: all, as Pinocchio's "
                        "parallel calls; 1: one device, no sharding)")
    p.add_argument("--chunk", type=lambda s: None if s == "auto" else int(s), default=None,
                   help="sodyn.batch chunk size for sodyn batches (default auto: sodyn.batch's own choice "
                        "from the function's memory per sample; 0: plain jax.vmap on one device)")
    p.add_argument("--reuse-freed-memory", action="store_true",
                   help="call sodyn.runtime.reuse_freed_memory() in every worker: glibc serves large buffers from its heap "
                        "and keeps freed memory (README, Tips)")
    p.add_argument("--budget-s", type=float, default=0.3, help="time budget per measurement (adaptive repeats)")
    p.add_argument("--max-reps", type=int, default=30)
    p.add_argument("--paired-rounds", type=int, default=9,
                   help="rounds of the paired measurement: sodyn and Pinocchio timed alternately at the largest "
                        "batch, float64 (0: none)")
    p.add_argument("--paired-min-s", type=float, default=0.03, help="seconds of calls per paired sample")
    p.add_argument("--max-call-s", type=float, default=4.0,
                   help="skip a batch whose predicted call time (from the previous batch) exceeds this")
    p.add_argument("--max-gib", type=float, default=3.0, help="skip a batch whose outputs would exceed this")
    p.add_argument("--worker-timeout", type=float, default=480.0)
    p.add_argument("--deadline-min", type=float, default=24.0,
                   help="stop launching workers after this many minutes (remaining groups reported skipped)")
    p.add_argument("--out", default=HERE, help="output folder for results.md, raw.jsonl, PNGs")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--report-only", action="store_true", help="rebuild results.md/plots from raw.jsonl")
    p.add_argument("--append", action="store_true", help="append to an existing raw.jsonl instead of starting anew")
    p.add_argument("--skip-sodyn", action="store_true", help="run only the MJX workers (with --append: fill gaps)")
    p.add_argument("--only-secondary", action="store_true",
                   help="run only the non-primary XLA settings and append to an existing raw.jsonl")
    # worker mode (internal)
    p.add_argument("--worker", choices=["sodyn", "mjx"], help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--xla-name", help=argparse.SUPPRESS)
    p.add_argument("--jsonl", help=argparse.SUPPRESS)
    p.add_argument("--libs", type=csv, default=["sodyn"], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.xla is None:  # the default settings whose flags this XLA knows (it aborts on unknown ones)
        from sodyn.runtime.xla import accepted_xla_flags

        known = set(accepted_xla_flags([s.split("=", 1)[1] for s in DEFAULT_XLA if s.split("=", 1)[1]]))
        a.xla = [s for s in DEFAULT_XLA if not s.split("=", 1)[1] or s.split("=", 1)[1] in known]
    if a.quick:
        a.models, a.batches, a.chain_batches, a.dtypes = ["chain8"], [2], [2], ["float64"]
        a.ops, a.peers = ["rnea", "M", "fd"], ["pin"]
        a.xla = a.xla[:1]
        a.budget_s, a.max_reps = 0.05, 3
        a.paired_rounds, a.paired_min_s = 3, 0.005
    return a


class WorkerCfg:
    def __init__(self, a):
        self.peers, self.libs, self.ops, self.dtypes = a.peers, a.libs, a.ops, a.dtypes
        chain = a.model.startswith("chain")
        if chain:
            self.ops = [o for o in a.ops if o in a.chain_ops]
            self.dtypes = [d for d in a.dtypes if d in a.chain_dtypes] or a.dtypes
        self.batches = a.chain_batches if chain else a.batches
        self.budget_s, self.max_reps, self.max_call_s = a.budget_s, a.max_reps, a.max_call_s
        self.paired_rounds, self.paired_min_s = a.paired_rounds, a.paired_min_s
        self.max_bytes = a.max_gib * 2**30
        self.mjx_all = a.mjx_all_batches
        self.mjx_grad_models = a.mjx_grad_models
        self.grad_batches = a.grad_batches
        self.cores, self.chunk = a.cores, a.chunk

    def mjx_batches(self, op, model_name):
        if self.mjx_all:
            return self.batches
        if op == "gradfd" and model_name not in self.mjx_grad_models:
            return []
        if op == "gradfd":
            return [b for b in self.batches if b in self.grad_batches] or [max(self.batches)]
        if op == "fd" and not model_name.startswith("chain"):
            return self.batches
        main = [b for b in self.batches if b == 1024] or [max(self.batches)]
        return main


def worker_main(a):
    import harness
    import jax

    import sodyn

    # Both before the first JAX computation of the worker.  Single-device calls run on the
    # calling thread (as README recommends for control loops; it applies to sodyn and MJX
    # alike, and not to batches split across devices).
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    if a.cores != 1:
        a.cores = sodyn.use_cpu_cores(a.cores or None)
    if a.reuse_freed_memory:  # the whole worker: sodyn, Pinocchio and MJX alike
        if not sodyn.runtime.reuse_freed_memory():
            raise SystemExit("--reuse-freed-memory: this C library is not glibc, or glibc refused the setting")

    sink = harness.Sink(a.jsonl, a.xla_name)
    cfg = WorkerCfg(a)
    if a.worker == "sodyn":
        harness.run_sodyn_pin(cfg, a.model, sink)
    else:
        harness.run_mjx(cfg, a.model, sink)


def _cli(a, **over):
    """Re-serialise the options a worker needs."""
    d = dict(cores=a.cores, chunk="auto" if a.chunk is None else a.chunk, ops=a.ops, grad_batches=a.grad_batches, chain_ops=a.chain_ops, chain_dtypes=a.chain_dtypes, mjx_grad_models=a.mjx_grad_models, dtypes=a.dtypes, peers=a.peers, batches=a.batches, chain_batches=a.chain_batches,
             budget_s=a.budget_s, max_reps=a.max_reps, max_call_s=a.max_call_s, max_gib=a.max_gib,
             paired_rounds=a.paired_rounds, paired_min_s=a.paired_min_s)
    d.update(over)
    out = []
    for k, v in d.items():
        if isinstance(v, list):
            v = ",".join(str(x) for x in v)
        out += [f"--{k.replace('_', '-')}", str(v)]
    return (out + (["--mjx-all-batches"] if a.mjx_all_batches else [])
            + (["--reuse-freed-memory"] if a.reuse_freed_memory else []))


def orchestrate(a):
    os.makedirs(a.out, exist_ok=True)
    jsonl = os.path.join(a.out, "raw.jsonl")
    if not a.report_only:
        if os.path.exists(jsonl) and not (a.only_secondary or a.append):
            os.remove(jsonl)
        t_start = time.time()
        jobs = []
        for si, setting in enumerate(a.xla):
            name, _, flags = setting.partition("=")
            primary = si == 0
            if primary and a.only_secondary:
                continue
            models = a.models if primary else [m for m in a.secondary_models if m in a.models]
            # cheapest-first order: all sodyn(+pin) groups, then MJX (slow compiles); Talos last in each
            models = sorted(models, key=lambda m: m == "talos")
            over = {} if primary else dict(ops=[o for o in a.secondary_ops if o in a.ops],
                                           batches=a.secondary_batches, chain_batches=a.secondary_batches)
            peers = a.peers if primary else [p for p in a.peers if p != "pin"]
            for model in models if not a.skip_sodyn else []:
                jobs.append((name, flags, model, "sodyn", dict(over, peers=peers)))
            if "mjx" in a.peers:
                for model in models:
                    if model.startswith("chain") and int(model[5:]) > a.mjx_chain_max_n:
                        jobs.append((name, flags, model, "mjx-skip", {}))
                        continue
                    # MJX under non-primary flags can be pathologically slow: no predict-skip, rely on timeout
                    mo = dict(over) if primary else dict(over, max_call_s=1e9, ops=["fd"])
                    if model.startswith("chain"):
                        mo["ops"] = [o for o in mo.get("ops", a.ops) if o == "fd"]
                    jobs.append((name, flags, model, "mjx", mo))
        with open(jsonl, "a") as f:
            import report

            commit, dirty, _ = report.sodyn_commit()
            f.write(json.dumps({"lib": "meta", "argv": sys.argv, "start": t_start, "only_secondary": a.only_secondary, "xla": a.xla, "sodyn_commit": commit,
                                "sodyn_dirty": dirty, "malloc_env": report.malloc_env(),
                                "reuse_freed_memory": a.reuse_freed_memory}) + "\n")
        for name, flags, model, kind, over in jobs:
            if kind == "mjx-skip":
                _append(jsonl, dict(lib="mjx", model=model, op="*", B=0, dtype="-", xla=name, status="skipped",
                                    note=f"MJX chain N > --mjx-chain-max-n {a.mjx_chain_max_n} (compile time)"))
                continue
            timeout = a.worker_timeout
            if kind == "mjx" and name != a.xla[0].partition("=")[0]:
                timeout = a.secondary_mjx_timeout
            elapsed = (time.time() - t_start) / 60
            if elapsed > a.deadline_min:
                _append(jsonl, dict(lib=kind, model=model, op="*", B=0, dtype="-", xla=name, status="skipped",
                                    note=f"deadline: {elapsed:.1f} min > --deadline-min"))
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--model", model, "--xla-name", name,
                   "--jsonl", jsonl] + _cli(a, **over)
            # the setting's flags and nothing else (import sodyn sets none)
            env = dict(os.environ, XLA_FLAGS=flags, PYTHONUNBUFFERED="1")
            print(f"== [{elapsed:5.1f} min] XLA_FLAGS={flags!r} {kind} {model}", flush=True)
            try:
                r = subprocess.run(cmd, env=env, timeout=timeout)
                if r.returncode != 0:
                    _append(jsonl, dict(lib=kind, model=model, op="*", B=0, dtype="-", xla=name, status="error",
                                        note=f"worker exited with {r.returncode}"))
            except subprocess.TimeoutExpired:
                _append(jsonl, dict(lib=kind, model=model, op="*", B=0, dtype="-", xla=name, status="timeout",
                                    note=f"worker killed after {timeout:.0f} s; rows missing after this"))
        _append(jsonl, dict(lib="meta", end=time.time(), wall_min=(time.time() - t_start) / 60))
    import report

    report.write(a, jsonl)


def _append(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def main(argv=None):
    a = parse_args(argv)
    if a.worker:
        worker_main(a)
    else:
        print("command:", " ".join(shlex.quote(x) for x in sys.argv), flush=True)
        orchestrate(a)


if __name__ == "__main__":
    main()
