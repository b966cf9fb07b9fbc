"""Smoke test of the benchmark harness (bench/run.py --quick): rows exist, numbers finite and positive.

No timing assertions: the harness only has to run end to end and write its report.
"""

import json
import math
import os
import platform
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "bench", "run.py")

pytest.importorskip("pinocchio")


def test_bench_quick(tmp_path):
    # a glibc allocator setting the workers inherit, recorded in the report (bench/README.md)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["MALLOC_TRIM_THRESHOLD_"] = "4000000000"
    # and sodyn.runtime.reuse_freed_memory() in the workers, where the C library is glibc
    glibc = platform.libc_ver()[0] == "glibc"
    r = subprocess.run([sys.executable, RUN, "--quick", "--no-plots", "--out", str(tmp_path)]
                       + (["--reuse-freed-memory"] if glibc else []),
                       capture_output=True, text=True, timeout=150, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    recs = [json.loads(line) for line in (tmp_path / "raw.jsonl").read_text().splitlines() if line.strip()]
    rows = {(x["lib"], x["op"], x["B"], x["dtype"]): x for x in recs if x.get("lib") not in ("meta",)}
    for op in ("rnea", "M", "fd"):
        for lib in ("sodyn", "pin-loop", "pin-par"):
            x = rows[(lib, op, 2, "float64")]
            assert x["status"] == "ok", x
            assert math.isfinite(x["per_sample_us"]) and x["per_sample_us"] > 0, x
        s = rows[("sodyn", op, 2, "float64")]
        assert math.isfinite(s["compile_s"]) and s["compile_s"] > 0
        paired = rows[("paired", op, 2, "float64")]  # sodyn and Pinocchio timed alternately
        assert paired["status"] == "ok" and paired["rounds"] == 3, paired
        assert 0 < paired["ratio_lo"] <= paired["ratio"] <= paired["ratio_hi"] < math.inf, paired
        assert math.isfinite(paired["ref_us"]) and paired["ref_us"] > 0, paired
    if (os.cpu_count() or 1) > 1:  # M has no parallel Pinocchio call: a process per core runs the loop
        assert rows[("paired", "M", 2, "float64")]["ref"] == "pin-procs"
        assert not rows[("pin-par", "M", 2, "float64")].get("estimated")
    check = rows[("check", "fd", 1, "float64")]
    assert check["agree_rel_err"] < 1e-8
    md = (tmp_path / "results.md").read_text()
    assert "sodyn commit measured" in md and "### chain8" in md
    meta = next(x for x in recs if x.get("lib") == "meta" and "argv" in x)
    assert meta["malloc_env"] == {"MALLOC_TRIM_THRESHOLD_": "4000000000"}, meta
    assert meta["reuse_freed_memory"] is glibc, meta
    assert "- allocator (`MALLOC_*` environment of the workers): `MALLOC_TRIM_THRESHOLD_=4000000000`" + (
        "; `--reuse-freed-memory`: `sodyn.runtime.reuse_freed_memory()` in every worker" if glibc else "") in md
    assert "| FD (ABA) | 64 | 2 |" in md
    assert "## Paired comparisons with Pinocchio" in md and "| chain8 | FD (ABA) | 2 |" in md


def test_call_floor_is_recorded_and_read_with_the_single_call(tmp_path):
    """A run with B = 1 times a jitted ``q + 1`` in the worker (the machine's per-call floor), and
    the single-call target's line quotes it beside the forward-dynamics call."""
    import jax.numpy as jnp

    import sodyn as sd

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import harness
    import report

    jsonl = tmp_path / "raw.jsonl"
    sink = harness.Sink(str(jsonl), "nofusion", verbose=False)
    common = dict(model="panda", nv=9, cores=1, chunk=None)
    harness._call_floor(sd, jnp.zeros((2, 9)), harness.Timer(0.02, 3), sink, common)
    sink(lib="sodyn", op="fd", B=1, dtype="float64", per_sample_us=30.0, call_us=30.0, **common)
    recs = report.load(str(jsonl))
    floor = next(r for r in recs if r["op"] == "floor")
    assert floor["status"] == "ok" and floor["B"] == 1 and 0 < floor["call_us"] < 30.0 * 1000, floor
    ix = report.Index(recs)
    ix.primary = "nofusion"  # set by report.write from the run's settings
    row = next(r for r in report.targets(ix, "nofusion") if r[0].startswith("single call"))
    assert row[2] == 30.0 and row[4] == "FAIL"
    assert f"a jitted `q + 1` in the same worker: {report._fmt(floor['call_us'])} µs" in row[5], row


def test_simulation_bench_models_and_sections(tmp_path):
    """bench/simulation.py's MuJoCo Solo12 has the sodyn model's dofs and mass, four foot spheres
    that collide with the floor plane only, and 12 servos; its results section is rewritten
    part by part, leaving the rest of the file alone (no timing: a few seconds)."""
    mujoco = pytest.importorskip("mujoco")
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import simulation

    solo = simulation.Solo()
    mj = simulation.mujoco_solo(2, 4)
    assert (mj.nq, mj.nv, mj.nu) == (solo.model.nq, solo.model.nv, 12)
    assert abs(float(mj.body_mass.sum()) - solo.mass) < 1e-5
    spheres = [i for i in range(mj.ngeom) if mj.geom_type[i] == mujoco.mjtGeom.mjGEOM_SPHERE]
    planes = [i for i in range(mj.ngeom) if mj.geom_type[i] == mujoco.mjtGeom.mjGEOM_PLANE]
    assert len(spheres) == 4 and len(planes) == 1 and mj.ngeom == 5
    assert all(mj.geom_contype[i] == 1 and mj.geom_conaffinity[i] == 0 for i in spheres)
    assert mj.opt.timestep == simulation.DT and mj.opt.iterations == 2
    path = tmp_path / "r.md"
    path.write_text("# r\n\nkeep\n")
    simulation._write({"step": "S1\n", "mjx": "M1\n"}, str(path))
    simulation._write({"step": "S2\n"}, str(path))
    text = path.read_text()
    assert text.startswith("# r\n\nkeep\n") and "S2\n" in text and "M1\n" in text and "S1" not in text
    assert text.count("## Simulation (issue 29)") == 1


@pytest.mark.slow
def test_collision_bench_quick(tmp_path):
    """bench/collision.py: its dm_control scene gives sodyn and MJX the same candidate pairs and
    starts on the floor; `--quick --parts grad` (the pushing rollout's gradient) runs end to end
    and writes its section, leaving the rest of the file alone (no timing assertions; ~40 s)."""
    pytest.importorskip("mujoco")
    pytest.importorskip("dm_control")
    import numpy as np
    from mujoco.mjx._src.collision_driver import geom_pairs

    import sodyn as sd

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import collision

    args = type("Args", (), {"mjx_iterations": 2, "mjx_ls_iterations": 4})
    scene = collision.Scene("humanoid", args)
    assert scene.contact.n_pairs == len(list(geom_pairs(scene.mj))) == 161
    q, _ = scene.states(4)
    floor = [i for i, g in enumerate(scene.contact.slots.geom1) if scene.model.geoms.names[g] == "floor"]
    lowest = np.min(np.asarray(sd.collide(scene.model, q[0]).distance)[floor])
    assert abs(lowest + collision.SINK) < 1e-4, lowest
    out = tmp_path / "r.md"
    out.write_text("# r\n\nkeep\n")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "collision.py"), "--quick", "--parts", "grad",
                        "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("# r\n\nkeep\n") and text.count("<!-- collision -->") == 1, text
    assert "<!-- collision:grad -->" in text and "<!-- collision:step -->" not in text
    row = next(line for line in text.splitlines() if line.startswith("| ") and line.rstrip().endswith("| True |"))
    ratio = float(row.split("**")[1])
    assert math.isfinite(ratio) and ratio > 0, row
