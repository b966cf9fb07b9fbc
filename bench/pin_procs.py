"""Pinocchio's per-sample calls, and a pool of processes that runs them on every core.

Pinocchio 4.1 has parallel versions of ABA and RNEA only (``abaInParallel``, ``rneaInParallel``).
For the mass matrix, ``M⁻¹``, the Delassus matrix and the ABA derivatives the harness used to
*estimate* the all-core time as the 1-thread loop's time divided by the cores.  On this shared
2-core machine the cores do not run at one speed (Pinocchio's ``crba`` loop pinned to one core
took 2.5–2.9 µs per call, pinned to the other 1.6–2.3 µs, minutes apart), so the estimate, taken
on whichever core the worker ran, could be up to 1.8× off what both cores deliver — while sodyn's
batch, split across both cores, waits for the slower one.  :class:`LoopPool` measures it instead:
one process per core, each with its own model, data and its share of the inputs, running the
same 1-thread loop at the same time; a call returns when every process is done, as a batch
split across cores does.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle

import numpy as np

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pin_calls(pin, pm, data, qp, vp, tp, frame: str) -> dict:
    """One Pinocchio call per op on sample ``i`` of the float64 inputs (Pinocchio's own
    ``q``/``v`` conventions), as ``op -> f(i)``."""
    fid = pm.getFrameId(frame)
    fr = pm.frames[fid]
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, pm, fr.parentJoint, fr.placement,
                                  pin.ReferenceFrame.LOCAL)
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())

    def lam(i):
        return np.linalg.inv(pin.computeDelassusMatrix(pm, data, qp[i], cms, cds, 0.0))

    return {
        "rnea": lambda i: pin.rnea(pm, data, qp[i], vp[i], tp[i]),
        "M": lambda i: pin.crba(pm, data, qp[i]),
        "Minv": lambda i: pin.computeMinverse(pm, data, qp[i]),
        "fd": lambda i: pin.aba(pm, data, qp[i], vp[i], tp[i]),
        "lambda": lam,
        "gradfd": lambda i: pin.computeABADerivatives(pm, data, qp[i], vp[i], tp[i]),
    }


def _serve(conn, model_bytes: bytes, frame: str, qp, vp, tp) -> None:
    """A pool process: build the calls once, then run ``(op, reps)`` loops over its samples."""
    import pinocchio as pin

    pm = pickle.loads(model_bytes)
    calls = pin_calls(pin, pm, pm.createData(), qp, vp, tp, frame)
    n = len(qp)
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        op, reps = msg
        f = calls[op]
        for _ in range(reps):
            for i in range(n):
                f(i)
        conn.send("done")


class LoopPool:
    """``processes`` processes, process ``j`` holding samples ``j·n … (j+1)·n − 1`` of the inputs
    (``n = samples_per_process``).  ``pool.run(op, reps)`` has every process loop ``reps`` times
    over its samples, at once, and returns when all are done: ``reps · n · processes`` samples."""

    def __init__(self, pm, frame: str, qp, vp, tp, processes: int, samples_per_process: int):
        ctx = mp.get_context("spawn")  # not fork: the parent runs JAX's threads
        model_bytes = pickle.dumps(pm)
        # one thread per process, as in the 1-thread loop (NumPy's BLAS in Λ's inverse would start more)
        saved = {k: os.environ.get(k) for k in _THREAD_VARS}
        os.environ.update(dict.fromkeys(_THREAD_VARS, "1"))
        n = samples_per_process
        self.processes, self.samples_per_process = processes, n
        self._conns, self._procs = [], []
        try:
            for j in range(processes):
                share = [np.ascontiguousarray(x[j * n:(j + 1) * n]) for x in (qp, vp, tp)]
                parent, child = ctx.Pipe()
                p = ctx.Process(target=_serve, args=(child, model_bytes, frame, *share), daemon=True)
                p.start()
                self._conns.append(parent)
                self._procs.append(p)
        finally:  # the parent's own settings, even if a process failed to start
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        for c in self._conns:
            if not c.poll(120) or c.recv() != "ready":
                self.close()
                raise RuntimeError("a Pinocchio pool process did not start")

    def run(self, op: str, reps: int) -> None:
        for c in self._conns:
            c.send((op, reps))
        for c in self._conns:
            c.recv()

    def samples(self, reps: int) -> int:
        """Samples computed by one ``run(op, reps)``."""
        return reps * self.samples_per_process * self.processes

    def close(self) -> None:
        for c in self._conns:
            try:
                c.send(None)
            except (BrokenPipeError, OSError):
                pass
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
