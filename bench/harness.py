"""Measurement worker: times sodyn, Pinocchio and MJX in one process and appends JSON lines.

Run by ``bench/run.py`` in a sub-process per XLA flag setting (XLA_FLAGS must be set before
``import jax``).  Every record is one (library, model, op, batch, dtype) measurement::

    {"lib", "model", "op", "B", "dtype", "xla", "per_sample_us", "call_us", "compile_s",
     "xla_bytes", "reps", "status", "note", ...}
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models as bm  # noqa: E402
from pin_procs import LoopPool, pin_calls  # noqa: E402

OPS = ("rnea", "M", "Minv", "fd", "lambda", "gradfd")
MJX_OPS = ("rnea", "M", "Minv", "fd", "gradfd")


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


LOAD0 = loadavg()


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Timer:
    """Adaptive repeats: median over ``reps`` samples, each sample ≥ ~1 ms of calls,
    the whole measurement limited to about ``budget_s``."""

    def __init__(self, budget_s: float = 1.0, max_reps: int = 30, min_reps: int = 3):
        self.budget_s, self.max_reps, self.min_reps = budget_s, max_reps, min_reps

    def __call__(self, f):
        t0 = time.perf_counter()
        f()
        first = time.perf_counter() - t0
        if first >= self.budget_s:  # very slow: one more call, median of the two
            t0 = time.perf_counter()
            f()
            second = time.perf_counter() - t0
            return statistics.median([first, second]), 2
        inner = max(1, int(2e-3 / max(first, 1e-7)))
        n = int(self.budget_s / (first * inner))
        n = max(self.min_reps, min(self.max_reps, n))
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            samples.append((time.perf_counter() - t0) / inner)
        return statistics.median(samples), n * inner


def seconds_per_call(f, min_s: float) -> float:
    """One timing sample: ``f`` called until at least ``min_s`` has passed; seconds per call."""
    n, t0 = 0, time.perf_counter()
    while True:
        f()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_s:
            return elapsed / n


def interleaved_rounds(subject, references: dict, rounds: int, min_s: float) -> list[tuple[float, dict]]:
    """Time ``subject`` and every reference alternately, ``rounds`` times (the order reversed every
    other round), each sample ``min_s`` of calls.  ``references`` maps a name to
    ``(f, calls_to_samples)``: the per-sample time of a call of ``f`` is its time divided by that.
    Returns, per round, the subject's seconds per call and the references' seconds per sample.

    A machine that slows down or speeds up during a run (a shared one does, by up to 1.5× within
    minutes) moves both sides of a round alike, so the per-round ratios cancel the drift that
    separate measurements minutes apart would carry into their ratio."""
    out = []
    for r in range(rounds):
        refs = {}
        if r % 2:
            subj = seconds_per_call(subject, min_s)
        for name, (f, per) in references.items():
            refs[name] = seconds_per_call(f, min_s) / per
        if not r % 2:
            subj = seconds_per_call(subject, min_s)
        out.append((subj, refs))
    return out


class Sink:
    def __init__(self, path: str, xla: str, verbose: bool = True):
        self.path, self.xla, self.verbose = path, xla, verbose

    def __call__(self, **rec):
        rec.setdefault("xla", self.xla)
        rec.setdefault("status", "ok")
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        if self.verbose:
            ps = rec.get("per_sample_us")
            txt = f"{ps:10.3f} us/sample" if isinstance(ps, (int, float)) else rec["status"]
            cs = rec.get("compile_s")
            cs = f" compile {cs:6.2f}s" if isinstance(cs, (int, float)) else ""
            print(f"[{self.xla}] {rec['lib']:>12} {rec['model']:>9} {rec['op']:>7} B={rec['B']:<5} "
                  f"{rec['dtype']:>7} {txt}{cs} {rec.get('note', '')}", flush=True)


def _predicted_skip(prev_per_sample_s, B, out_bytes, max_call_s, max_bytes):
    if out_bytes > max_bytes:
        return f"skipped: output {out_bytes / 2**30:.1f} GiB > limit"
    if prev_per_sample_s is not None and prev_per_sample_s * B > max_call_s:
        return f"skipped: predicted {prev_per_sample_s * B:.1f} s per call > {max_call_s:.0f} s limit"
    return None


# ----------------------------------------------------------------------------- sodyn + pin


def _sodyn_batched(fn, cfg):
    """``sodyn.batch`` (cache-sized chunks, split across the worker's CPU devices: sodyn's
    recommended CPU batching; chunk size ``--chunk``, by default its own choice), or plain
    ``jax.vmap`` with ``--chunk 0``."""
    import jax

    if cfg.chunk != 0:
        import sodyn as sd

        return sd.batch(fn, chunk_size=cfg.chunk)
    return jax.vmap(fn)


def _split_from(cfg) -> int:
    """Per-device batch from which ``sodyn.batch`` splits a batch across devices (0: never)."""
    from sodyn.runtime.tuning import SPLIT_FROM

    return SPLIT_FROM if cfg.chunk is None else cfg.chunk


def _mjx_batched(fn, cfg, batch: int):
    """``jax.vmap`` of an MJX function, split across the same CPU devices as sodyn, from the same
    batch size on (``sodyn.batch`` splits a batch when each device gets a full chunk), without chunks.
    ``sodyn.batch`` keeps a function that calls LAPACK on one device (see ``sodyn.runtime.batching``):
    MJX's ``forward`` and M⁻¹ factor the mass matrix, so they run on one core."""
    import jax

    n_dev = len(jax.local_devices())
    if n_dev > 1 and _split_from(cfg) > 0 and batch >= n_dev * _split_from(cfg):
        import sodyn as sd

        return sd.batch(fn, chunk_size=batch // n_dev)
    return jax.vmap(fn)


def _cores_used(batched, B: int, args) -> int:
    """How many CPU devices a batched call runs on: those ``sodyn.batch`` splits it across (all of
    them once each gets its share, unless the function calls LAPACK, see ``sodyn.runtime.batching``); 1
    for plain ``jax.vmap`` and at B = 1."""
    if B == 1 or not hasattr(batched, "split_devices"):
        return 1
    return max(1, len(batched.split_devices(*args)))


def _compile_call(batched, fn, B: int, args, jit=None):
    """Compile and return ``(compiled, call_args)``: at B = 1 the single call ``jit(fn)`` on one
    sample (what a user's control loop runs), otherwise ``jit(batched)`` on the batch.  ``jit``
    is ``jax.jit`` unless given: sodyn runs under ``sodyn.jit``, its documented entry point,
    with ``latency=True`` for the single call.  A ``sodyn.batch`` batch (sodyn's, and MJX's when
    split across devices) gets its inputs placed by ``batched.place`` first, each device's
    share on that device, where a simulation loop's state stays between split calls (the
    placement is not timed, as Pinocchio's inputs are NumPy arrays already in memory)."""
    import jax

    if B == 1:
        one = tuple(a[0] for a in args)
        single = jax.jit(fn) if jit is None else jit(fn, latency=True)
        return single.lower(*one).compile(), one
    if hasattr(batched, "place"):  # sodyn.batch: inputs where a split call reads them (as its outputs come)
        args = jax.block_until_ready(batched.place(*args))
    return (jit or jax.jit)(batched).lower(*args).compile(), args


def run_sodyn_pin(cfg, model_name: str, sink: Sink):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    import sodyn as sd
    from sodyn.io import q_to_pinocchio, v_to_pinocchio

    pm = bm.pin_model(model_name) if ("pin" in cfg.peers or not bm.is_chain(model_name)) else None
    model = bm.sodyn_model(model_name, pm)
    nv, nq = model.nv, model.nq
    frame = bm.ee_frame(model_name)
    timer = Timer(cfg.budget_s, cfg.max_reps)
    common = dict(model=model_name, nv=int(nv), cores=len(jax.local_devices()), chunk=cfg.chunk)

    has_osi = hasattr(sd, "operational_space_inertia")
    Bmax = max(cfg.batches)
    PB = Bmax  # the batch of the paired measurements (the targets' B = 4096 in a full run)
    pin_refs: dict = {}  # op -> {name: (f, calls_to_samples)}, Pinocchio's references for the paired rows
    pool = None  # pin_procs.LoopPool, started for the first op Pinocchio has no parallel version of (False: failed)
    key = jax.random.PRNGKey(0)
    kq, kv, kt = jax.random.split(key, 3)
    q64 = jax.vmap(lambda k: sd.random_configuration(model, k))(jax.random.split(kq, Bmax))
    v64 = jax.random.normal(kv, (Bmax, nv), jnp.float64)
    t64 = jax.random.normal(kt, (Bmax, nv), jnp.float64)

    # ---------------- Pinocchio (float64 only: its Python bindings are double precision)
    if pm is not None and "pin" in cfg.peers:
        import pinocchio as pin

        qp = np.asarray(jax.vmap(lambda q: q_to_pinocchio(model, q))(q64), dtype=np.float64)
        vp = np.asarray(jax.vmap(lambda v: v_to_pinocchio(model, v))(v64), dtype=np.float64)
        tp = np.asarray(jax.vmap(lambda v: v_to_pinocchio(model, v))(t64), dtype=np.float64)
        data = pm.createData()
        # agreement check (sample 0): sodyn FD vs Pinocchio ABA. sodyn applies the URDF joint damping
        # (τ − damping ⊙ v) and pin.aba does not (Panda's URDF has damping), so Pinocchio gets that τ.
        a_sd = np.asarray(v_to_pinocchio(model, sd.forward_dynamics(model, q64[0], v64[0], t64[0])))
        a_pin = pin.aba(pm, data, qp[0], vp[0], tp[0] - np.asarray(pm.damping) * vp[0])
        err = float(np.max(np.abs(a_sd - a_pin)) / (1.0 + np.max(np.abs(a_pin))))
        sink(lib="check", op="fd", B=1, dtype="float64", agree_rel_err=err, note="sodyn FD vs pin.aba", **common)

        single = pin_calls(pin, pm, data, qp, vp, tp, frame)
        notes = {
            "M": "crba (upper triangle)", "Minv": "computeMinverse (upper triangle)",
            "lambda": "inv(computeDelassusMatrix 6D)", "gradfd": "computeABADerivatives (full Jacobians)",
        }
        ncores = os.cpu_count() or 1
        model_pool = pin.ModelPool(pm, ncores)
        Qf, Vf, Tf = (np.asfortranarray(x.T) for x in (qp, vp, tp))
        loop_ps = {}
        for op in cfg.ops:
            # the per-sample loop cost does not depend on B: loop over min(B, 256) samples
            nloop = min(Bmax, 256)
            f = single[op]

            def loop(f=f, nloop=nloop):
                for i in range(nloop):
                    f(i)

            t, reps = timer(loop)
            loop_ps[op] = t / nloop
            # what the paired measurement (below, with sodyn's call) times: the references of the targets
            procs = None  # (f, samples per call) of the process pool, for ops with no parallel version
            if op in ("fd", "rnea"):
                par = pin.abaInParallel if op == "fd" else pin.rneaInParallel
                batch = (Qf[:, :PB], Vf[:, :PB], Tf[:, :PB])
                pin_refs[op] = {f"pin-par{'' if nt == ncores else '1'}": (lambda p=par, n=nt, a=batch: p(n, model_pool, *a), PB)
                                for nt in sorted({ncores, 1}, reverse=True)}
            else:
                if pool is None and ncores > 1:  # False once it failed to start: not tried again
                    pool = _start_pool(pm, frame, qp, vp, tp, ncores, nloop, sink, common) or False
                if pool:
                    reps_per_call = max(1, round(0.02 / max(t, 1e-9)))  # about 20 ms per call
                    procs = (lambda o=op, r=reps_per_call: pool.run(o, r), pool.samples(reps_per_call))
                    t_procs, reps_procs = timer(procs[0])
                pin_refs[op] = {"pin-procs": procs} if procs else {"pin-loop/cores": (loop, nloop * ncores)}
            for B in cfg.batches:
                sink(lib="pin-loop", op=op, B=B, dtype="float64", per_sample_us=t / nloop * 1e6,
                     call_us=t / nloop * B * 1e6, reps=reps, note=notes.get(op, "") + " python loop, 1 thread",
                     **common)
                if op in ("fd", "rnea"):
                    par = pin.abaInParallel if op == "fd" else pin.rneaInParallel
                    for nt, lib in ((ncores, "pin-par"), (1, "pin-par1")):
                        if lib == "pin-par1" and ncores == 1:
                            continue
                        Q, V, T = Qf[:, :B], Vf[:, :B], Tf[:, :B]
                        tt, reps = timer(lambda: par(nt, model_pool, Q, V, T))
                        sink(lib=lib, op=op, B=B, dtype="float64", per_sample_us=tt / B * 1e6, call_us=tt * 1e6,
                             reps=reps, note=f"{par.__name__} {nt} thread(s)", **common)
                elif procs:
                    sink(lib="pin-par", op=op, B=B, dtype="float64", per_sample_us=t_procs / procs[1] * 1e6,
                         call_us=t_procs / procs[1] * B * 1e6, reps=reps_procs,
                         note=f"{ncores} processes at once, each a 1-thread loop over its own samples (pin "
                              f"{pin.__version__} has no parallel {notes[op].split()[0]})", **common)
                else:
                    sink(lib="pin-par", op=op, B=B, dtype="float64", per_sample_us=t / nloop / ncores * 1e6,
                         call_us=t / nloop * B / ncores * 1e6, reps=reps, estimated=True,
                         note=f"ESTIMATE: pin {pin.__version__} has no parallel {notes[op].split()[0]}; 1-thread loop / {ncores} cores",
                         **common)

    # ---------------- sodyn
    if "sodyn" not in cfg.libs:
        return

    def make_fns(m):
        fns = {
            "rnea": lambda q, v, t: sd.inverse_dynamics(m, q, v, t),
            "M": lambda q, v, t: sd.mass_matrix(m, q),
            "Minv": lambda q, v, t: sd.inverse_mass_matrix(m, q),
            "fd": lambda q, v, t: sd.forward_dynamics(m, q, v, t),
            "gradfd": jax.grad(lambda q, v, t: jnp.sum(sd.forward_dynamics(m, q, v, t)), argnums=(0, 2)),
        }
        if has_osi:
            fns["lambda"] = lambda q, v, t: sd.operational_space_inertia(m, q, [frame])
        fns["lambda_composed"] = lambda q, v, t: _lambda_composed(sd, m, q, frame)
        return fns

    if 1 in cfg.batches:
        _call_floor(sd, q64, timer, sink, common)
    for dt_name in cfg.dtypes:
        dt = jnp.float64 if dt_name == "float64" else jnp.float32
        m = model.astype(dt)
        fns = make_fns(m)
        ops = list(cfg.ops)
        if "lambda" in ops:
            ops.insert(ops.index("lambda") + 1, "lambda_composed")
        for op in ops:
            if op == "lambda" and not has_osi:
                for B in cfg.batches:
                    sink(lib="sodyn", op=op, B=B, dtype=dt_name, status="not available",
                         note="sd.operational_space_inertia missing", **common)
                continue
            fn = fns[op]
            prev = None
            batches = cfg.batches
            if op == "gradfd":
                batches = [b for b in cfg.batches if b in cfg.grad_batches] or [max(cfg.batches)]
            for B in sorted(batches):
                out_elems = {"M": nv * nv, "Minv": nv * nv, "lambda": 36, "lambda_composed": 36,
                             "gradfd": nq + nv}.get(op, nv)
                out_bytes = B * out_elems * (8 if dt_name == "float64" else 4) * (8 if op == "gradfd" else 3)
                skip = _predicted_skip(prev, B, out_bytes, cfg.max_call_s, cfg.max_bytes)
                if skip:
                    sink(lib="sodyn", op=op, B=B, dtype=dt_name, status="skipped", note=skip, **common)
                    continue
                q, v, t = q64[:B].astype(dt), v64[:B].astype(dt), t64[:B].astype(dt)
                try:
                    t0 = time.perf_counter()
                    batched = _sodyn_batched(fn, cfg)
                    compiled, call_args = _compile_call(batched, fn, B, (q, v, t), sd.jit)
                    tc = time.perf_counter() - t0
                    chunk = batched.chunk_size(q, v, t) if B > 1 and hasattr(batched, "chunk_size") else 0
                except NotImplementedError as e:
                    sink(lib="sodyn", op=op, B=B, dtype=dt_name, status="not available",
                         note=f"NotImplementedError: {e}"[:120], **common)
                    break
                except Exception as e:  # noqa: BLE001 - report and go on
                    sink(lib="sodyn", op=op, B=B, dtype=dt_name, status="error", note=repr(e)[:200], **common)
                    break
                mem = _mem(compiled)
                try:
                    tt, reps = timer(lambda c=compiled, a=call_args: jax.block_until_ready(c(*a)))
                except Exception as e:  # noqa: BLE001
                    sink(lib="sodyn", op=op, B=B, dtype=dt_name, status="error", note=repr(e)[:200], **common)
                    break
                prev = tt / B if B >= 64 else None  # B=1 is dominated by dispatch: do not extrapolate
                note = "jit(vmap) of inv(J M^-1 J^T) from sodyn primitives" if op == "lambda_composed" else ""
                sink(lib="sodyn", op=op, B=B, dtype=dt_name, per_sample_us=tt / B * 1e6, call_us=tt * 1e6,
                     compile_s=tc, xla_bytes=mem, reps=reps, note=note,
                     **dict(common, chunk=chunk, cores_used=_cores_used(batched, B, (q, v, t))))
                if B == PB and dt_name == "float64" and op in pin_refs and cfg.paired_rounds > 0:
                    _paired(sink, op, B, compiled, call_args, pin_refs[op], cfg, common)
                del compiled
    if pool:
        pool.close()
    sink(lib="process", op="-", B=0, dtype="-", maxrss_mb=maxrss_mb(), note="sodyn/pin worker peak RSS",
         loadavg_end=loadavg(), loadavg_start=LOAD0,
         **common)


def _call_floor(sd, q, timer, sink, common):
    """Time the cheapest single call there is, ``sodyn.jit(lambda q: q + 1, latency=True)`` on the
    first float64 sample of ``q``, compiled and called as the B = 1 rows are, in the worker that
    times them: what dispatching any jitted call costs on this machine at this moment, so a single
    call's time can be read against it."""
    import jax

    plus_one, one = _compile_call(None, lambda x: x + 1.0, 1, (q,), sd.jit)
    tt, reps = timer(lambda: jax.block_until_ready(plus_one(*one)))
    sink(lib="sodyn", op="floor", B=1, dtype="float64", per_sample_us=tt * 1e6, call_us=tt * 1e6, reps=reps,
         note="jitted q + 1: the per-call floor", **common)


def _start_pool(pm, frame, qp, vp, tp, processes, samples_per_process, sink, common):
    """A :class:`pin_procs.LoopPool` over ``processes`` cores (each process its own samples when the
    batch has enough, else all the first ones), or ``None`` (recorded) if it does not start."""
    n = samples_per_process
    if len(qp) < processes * n:
        qp, vp, tp = (np.concatenate([x[:n]] * processes) for x in (qp, vp, tp))
    try:
        return LoopPool(pm, frame, qp, vp, tp, processes, n)
    except Exception as e:  # noqa: BLE001 - fall back to the loop / cores estimate, and say so
        sink(lib="pin-procs", op="-", B=0, dtype="float64", status="error", note=repr(e)[:200], **common)
        return None


def _paired(sink, op, B, compiled, call_args, references, cfg, common):
    """Interleaved rounds of sodyn's call and Pinocchio's references on the same batch
    (:func:`interleaved_rounds`); records the median per-sample times and the median, lowest and
    highest per-round ratio of sodyn to the faster reference of the round."""
    import jax

    rounds = interleaved_rounds(lambda: jax.block_until_ready(compiled(*call_args)), references,
                                cfg.paired_rounds, cfg.paired_min_s)
    ratios = [subj / B / min(refs.values()) for subj, refs in rounds]
    best = [min(refs, key=refs.get) for _, refs in rounds]
    sink(lib="paired", op=op, B=B, dtype="float64",
         per_sample_us=statistics.median(subj / B for subj, _ in rounds) * 1e6,
         ref_us=statistics.median(min(refs.values()) for _, refs in rounds) * 1e6,
         ratio=statistics.median(ratios), ratio_lo=min(ratios), ratio_hi=max(ratios), rounds=len(rounds),
         ref=max(set(best), key=best.count), estimated=any(name.startswith("pin-loop") for name in references),
         note=f"sodyn vs {'/'.join(references)} interleaved, {len(rounds)} rounds", **common)


def _lambda_composed(sd, m, q, frame):
    import jax.numpy as jnp

    J = sd.frame_jacobian(m, q, frame)
    Mi = sd.inverse_mass_matrix(m, q)
    return jnp.linalg.inv(J @ Mi @ J.T)


def _mem(compiled):
    try:
        ma = compiled.memory_analysis()
        return int(ma.temp_size_in_bytes + ma.argument_size_in_bytes + ma.output_size_in_bytes)
    except Exception:  # noqa: BLE001
        return None


# ----------------------------------------------------------------------------- MJX




def run_mjx(cfg, model_name: str, sink: Sink):
    import jax
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    mjm = bm.mujoco_model(model_name)
    m = mjx.put_model(mjm)
    d0 = mjx.make_data(m)
    nq, nv = mjm.nq, mjm.nv
    timer = Timer(cfg.budget_s, cfg.max_reps)
    common = dict(model=model_name, nv=int(nv), cores=len(jax.local_devices()))
    rng = np.random.default_rng(0)
    Bmax = max(cfg.batches)
    qpos = np.tile(mjm.qpos0, (Bmax, 1)) + 0.3 * rng.standard_normal((Bmax, nq))
    for j in range(mjm.njnt):
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            a = mjm.jnt_qposadr[j] + 3
            qpos[:, a:a + 4] /= np.linalg.norm(qpos[:, a:a + 4], axis=1, keepdims=True)
    qvel = rng.standard_normal((Bmax, nv))
    tau = rng.standard_normal((Bmax, nv))
    qpos, qvel, tau = (jnp.asarray(x, jnp.float32) for x in (qpos, qvel, tau))
    eye = jnp.eye(nv, dtype=jnp.float32)

    def with_state(qp, qv, t):
        return d0.replace(qpos=qp, qvel=qv, qfrc_applied=t)

    def fwd(qp, qv, t):
        return mjx.forward(m, with_state(qp, qv, t)).qacc

    def mass(qp):
        d = with_state(qp, d0.qvel, d0.qfrc_applied)
        d = mjx.kinematics(m, d)
        d = mjx.com_pos(m, d)
        d = mjx.crb(m, d)
        return d

    fns = {
        "fd": fwd,
        "rnea": lambda qp, qv, t: mjx.inverse(m, with_state(qp, qv, d0.qfrc_applied).replace(qacc=t)).qfrc_inverse,
        "M": lambda qp, qv, t: mjx.full_m(m, mass(qp)),
        "Minv": lambda qp, qv, t: _mjx_minv(mjx, m, mass(qp), eye),
        "gradfd": jax.grad(lambda qp, qv, t: jnp.sum(fwd(qp, qv, t)), argnums=(0, 2)),
    }
    notes = {"fd": "mjx.forward -> qacc", "rnea": "mjx.inverse -> qfrc_inverse", "M": "kinematics+com_pos+crb+full_m",
             "Minv": "... +factor_m+solve_m(I)", "gradfd": "jax.grad through mjx.forward"}
    for op in cfg.ops:
        if op == "gradfd" and not cfg.mjx_batches(op, model_name):
            sink(lib="mjx", op=op, B=0, dtype="float32", status="skipped",
                 note="MJX gradient not compiled for this model (--mjx-grad-models; compile ≥45 s)", **common)
            continue
        if op not in MJX_OPS:
            for B in cfg.mjx_batches(op, model_name):
                sink(lib="mjx", op=op, B=B, dtype="float32", status="not available",
                     note="MJX has no operational-space inertia", **common)
            continue
        prev = None
        for B in sorted(cfg.mjx_batches(op, model_name)):
            skip = _predicted_skip(prev, B, 0, cfg.max_call_s, cfg.max_bytes)
            if skip:
                sink(lib="mjx", op=op, B=B, dtype="float32", status="skipped", note=skip, **common)
                continue
            args = (qpos[:B], qvel[:B], tau[:B])
            try:
                t0 = time.perf_counter()
                batched = _mjx_batched(fns[op], cfg, B)
                compiled, call_args = _compile_call(batched, fns[op], B, args)
                tc = time.perf_counter() - t0
                tt, reps = timer(lambda: jax.block_until_ready(compiled(*call_args)))
            except Exception as e:  # noqa: BLE001
                sink(lib="mjx", op=op, B=B, dtype="float32", status="error", note=repr(e)[:200], **common)
                break
            prev = tt / B if B >= 64 else None
            sink(lib="mjx", op=op, B=B, dtype="float32", per_sample_us=tt / B * 1e6, call_us=tt * 1e6,
                 compile_s=tc, xla_bytes=_mem(compiled), reps=reps, note=notes[op],
                 **dict(common, cores_used=_cores_used(batched, B, args)))
    sink(lib="process", op="-", B=0, dtype="-", maxrss_mb=maxrss_mb(), note="mjx worker peak RSS",
         loadavg_end=loadavg(), loadavg_start=LOAD0, **common)


def _mjx_minv(mjx, m, d, eye):
    import jax
    from mujoco.mjx._src import smooth

    d = smooth.factor_m(m, d)
    return jax.vmap(lambda x: smooth.solve_m(m, d, x))(eye)


def finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0
