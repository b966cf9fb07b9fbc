"""The ``sodyn`` command line (``sodyn.cli``) and the viewer it draws with (``sodyn.viewer``).

End to end through ``python -m sodyn`` in a subprocess (the files it writes are read back), the
error paths in process (each one line on stderr and exit status 2, before any simulation), the
contact rules of ``--contact``, ``info``, and a closed stdout pipe.
"""

import errno
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import sodyn as sd
from sodyn.cli import main
from sodyn.cli_contact import contact_for

ROOT = pathlib.Path(__file__).resolve().parents[1]

HOPPER_URDF = """<robot name="hopper">
  <link name="base"><inertial><mass value="2"/>
    <inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="leg"><inertial><origin xyz="0 0 -0.25"/><mass value="1"/>
    <inertia ixx="0.02" iyy="0.02" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="foot"/>
  <joint name="hip" type="revolute"><parent link="base"/><child link="leg"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/></joint>
  <joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/><origin xyz="0 0 -0.5"/></joint>
</robot>
"""


def run_sodyn(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """``python -m sodyn ARGS`` on this checkout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "sodyn", *args], capture_output=True, text=True, env=env,
                          timeout=300, **kwargs)


def one_line_error(err: str, status: int, *fragments: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def hopper(tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("models") / "hopper.urdf"
    path.write_text(HOPPER_URDF)
    return path


# ---------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------


def test_simulate_end_to_end_prints_its_summary_and_writes_npz_png_and_gif(tmp_path):
    out, plot, gif = tmp_path / "run.npz", tmp_path / "run.png", tmp_path / "run.gif"
    proc = run_sodyn("simulate", "--batch", "4", "--steps", "20", "--out", str(out), "--plot", str(plot),
                     "--gif", str(gif))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    text = proc.stdout
    assert "pendulum_chain_7" in text  # the default model
    for label in ("compile ", "run ", "us per step and sample", "energy drift median", "energy [J]"):
        assert label in text, text
    assert "finite       4/4 samples" in text
    assert "4/4" in proc.stderr  # the progress bar
    for path in (out, plot, gif):
        assert path.stat().st_size > 0, path

    data = np.load(out)
    assert data["final_q"].shape == (4, 7) and data["initial_v"].shape == (4, 7)
    assert data["energy_drift"].shape == (4,) and np.all(data["finite"])
    assert data["energy_mean"].shape == (20,)  # per-step energy, drawn by --plot
    assert str(data["model"]) == "pendulum_chain_7" and int(data["steps"]) == 20

    from PIL import Image

    with Image.open(gif) as image:
        assert image.format == "GIF" and image.n_frames == 21  # the initial state and every step
    with Image.open(plot) as image:
        assert image.format == "PNG"


class ClosedPipe:
    """A stdout whose reader has gone (``sodyn simulate ... | head -1``)."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):  # nothing buffered: every write already failed
        pass

    def fileno(self):
        raise OSError("no file descriptor")


def test_simulate_with_contact_and_randomization_writes_its_files_into_a_closed_pipe(monkeypatch, tmp_path):
    out = tmp_path / "run.npz"
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["simulate", "cart_pole", "--batch", "4", "--steps", "20", "--contact", "--randomize", "0.2",
                 "--out", str(out)]) == 0
    monkeypatch.undo()
    data = np.load(out)
    assert str(data["contact"]) == "leaf bodies" and np.all(data["finite"])
    mass = data["param_model.mass"]
    nominal = np.asarray(sd.models.cart_pole().mass)
    assert mass.shape == (4, 2) and np.all(np.abs(mass / nominal - 1.0) <= 0.2 + 1e-6)
    assert len(np.unique(mass[:, 0])) == 4  # each sample draws its own
    friction = data["param_contact.friction"]
    assert np.all((friction >= 0.8 - 1e-6) & (friction <= 1.2 + 1e-6))


def test_simulate_with_contact_collides_the_models_geoms(tmp_path, capsys):
    """``--contact`` on a model with geoms: its geoms against each other and a ground plane (a
    box dropped on a box lands on it and the pair stays apart), the rule printed and stored."""
    xml = tmp_path / "boxes.xml"
    xml.write_text('<mujoco><worldbody><body name="a" pos="0 0 0.1"><freejoint/><geom name="ga" type="box" '
                   'size="0.1 0.1 0.1"/></body><body name="b" pos="0 0 0.35"><freejoint/><geom name="gb" '
                   'type="box" size="0.05 0.05 0.05"/></body></worldbody></mujoco>')
    out = tmp_path / "run.npz"
    assert main(["simulate", str(xml), "--batch", "2", "--steps", "400", "--contact", "--noise", "0",
                 "--out", str(out)]) == 0
    assert "the model's geoms, 3 candidate pairs" in capsys.readouterr().out
    data = np.load(out)
    assert "the model's geoms" in str(data["contact"]) and np.all(data["finite"])
    q = data["final_q"]
    assert np.all(q[:, 9] > q[:, 2] + 0.14)    # the small box rests on the big one, not inside it


def test_simulate_writes_the_models_sensor_readings_per_step(tmp_path):
    """A model with sensors: ``--out`` holds the statistics of their readings over the samples at
    every step, in MuJoCo's ``sensordata`` layout, with names, kinds, offsets and sizes; a
    joint-position sensor reads each step's start state (the first row: the initial angles)."""
    xml = tmp_path / "pendulum.xml"
    xml.write_text('<mujoco><worldbody><body name="link" pos="0 0 1"><joint name="hinge" axis="0 1 0"/>'
                   '<geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/><site name="tip" pos="0 0 -0.5"/>'
                   '</body></worldbody><sensor><accelerometer name="imu" site="tip"/>'
                   '<jointpos name="angle" joint="hinge"/></sensor></mujoco>')
    out = tmp_path / "run.npz"
    assert main(["simulate", str(xml), "--batch", "3", "--steps", "7", "--out", str(out)]) == 0
    data = np.load(out)
    assert list(data["sensor_names"]) == ["imu", "angle"] and list(data["sensor_kinds"]) == ["accelerometer",
                                                                                             "jointpos"]
    assert list(data["sensor_adr"]) == [0, 3] and list(data["sensor_dim"]) == [3, 1]
    for field in ("mean", "std", "min", "max"):
        assert data[f"sensors_{field}"].shape == (7, 4) and np.all(np.isfinite(data[f"sensors_{field}"]))
    angle = data["initial_q"][:, 0]
    np.testing.assert_allclose(data["sensors_mean"][0, 3], np.mean(angle), rtol=1e-6)
    np.testing.assert_allclose([data["sensors_min"][0, 3], data["sensors_max"][0, 3]], [angle.min(), angle.max()],
                               rtol=1e-6)


def test_contact_rule_geoms_then_feet_then_leaf_bodies(hopper):
    b = sd.ModelBuilder(name="ball")
    b.add_body("ball", None, sd.JointSpec.free(), mass=1.0, inertia=np.eye(3) * 0.004)
    b.add_geom("shell", "ball", "sphere", (0.1, 0.0, 0.0))
    contact, rule = contact_for(b.build())
    assert rule == "collision geoms" and contact.names == ("shell",)

    contact, rule = contact_for(sd.load_urdf(str(hopper), floating_base=True))
    assert rule == "frames named like feet" and contact.names == ("foot",)
    np.testing.assert_allclose(np.asarray(contact.position), [[0.0, 0.0, -0.5]])

    contact, rule = contact_for(sd.models.humanoid_like())
    assert rule == "leaf bodies" and float(contact.height) == 0.0
    assert contact.names == ("left_leg_5", "right_leg_5", "left_arm_3", "right_arm_3", "head_1")

    # a chain hanging from the origin: the plane goes 2 cm under its tip (2 m down at q = 0)
    contact, rule = contact_for(sd.models.double_pendulum())
    assert contact.names == ("tip",) and "plane lowered" in rule
    np.testing.assert_allclose(float(contact.height), -2.02, rtol=1e-6)


@pytest.mark.parametrize("argv, fragments", [
    (["simulate", "missing.urdf"], ["model file 'missing.urdf' not found"]),
    (["simulate", "no_such_model"], ["unknown model 'no_such_model'", "pendulum_chain"]),
    (["simulate", "--batch", "0"], ["--batch", "positive integer"]),
    (["simulate", "--batch", "many"], ["--batch", "'many'"]),
    (["simulate", "--dt", "-0.001"], ["--dt", "positive"]),
    (["simulate", "--dt", "0"], ["--dt", "positive"]),
    (["simulate", "--dt", "nan"], ["--dt", "positive"]),
    (["simulate", "--steps", "0"], ["--steps", "positive integer"]),
    (["simulate", "--integrator", "euler"], ["--integrator", "'euler'"]),
    (["simulate", "--randomize", "1.5"], ["--randomize", "[0, 1)"]),
    (["simulate", "--out", "{missing}/run.npz"], ["--out", "does not exist"]),
    (["simulate", "--plot", "{missing}/run.png"], ["--plot", "does not exist"]),
    (["simulate", "--gif", "{missing}/run.gif"], ["--gif", "does not exist"]),
    (["simulate", "--out", "{tmp}/run.txt"], ["--out", ".npz"]),
    (["simulate", "--gif", "{tmp}/dir.gif"], ["--gif", "is a directory"]),
    (["simulate", "{tmp}/broken.urdf"], ["broken.urdf", "malformed XML"]),
    (["info", "no_such_model"], ["unknown model"]),
    (["info", "missing.xml"], ["not found"]),
    ([], ["required"]),
])
def test_bad_arguments_and_files_get_one_line_and_status_2(argv, fragments, tmp_path, capsys):
    (tmp_path / "dir.gif").mkdir()
    (tmp_path / "broken.urdf").write_text("<robot name='r'><link")
    argv = [a.format(tmp=tmp_path, missing=tmp_path / "missing") for a in argv]
    status = main(argv)
    captured = capsys.readouterr()
    one_line_error(captured.err, status, *fragments)
    assert captured.out == ""
    assert {p.name for p in tmp_path.iterdir()} == {"dir.gif", "broken.urdf"}  # nothing written


def test_every_option_shows_its_default_in_the_help(capsys):
    assert main(["simulate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for option, default in (("--batch", "1024"), ("--steps", "500"), ("--dt", "0.001"), ("--integrator", "implicit"),
                            ("--randomize", "0.0"), ("--seed", "0"), ("--cores", "0"), ("--out", "None")):
        assert option in text and f"(default: {default})" in text, option
    assert "(default: pendulum_chain)" in text


def test_a_bad_argument_in_a_real_process_is_one_line_with_status_2():
    proc = run_sodyn("simulate", "--batch", "0")
    one_line_error(proc.stderr, proc.returncode, "--batch")
    assert proc.stdout == ""


# ---------------------------------------------------------------------------
# safe outputs: atomic writes, --force, chunks kept in FILE.npz.parts, --resume
# ---------------------------------------------------------------------------


def _full_disk_after_some_bytes(path, *args, **kwargs):
    """A writer that writes part of its file, then finds the disk full."""
    with open(path, "wb") as f:
        f.write(b"PK\x03\x04 half a file")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.fast
def test_atomic_write_keeps_the_previous_file_and_no_temporary_when_the_disk_is_full(tmp_path):
    from sodyn.io.atomic import atomic_open, atomic_path

    path = tmp_path / "run.npz"
    path.write_bytes(b"previous")
    with pytest.raises(OSError, match="No space left"):
        with atomic_path(path) as temp:
            assert pathlib.Path(temp).parent == tmp_path and temp.endswith(".npz")  # same folder, same suffix
            _full_disk_after_some_bytes(temp)
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(path, "w") as f:
            f.write("half")
            raise KeyboardInterrupt
    assert path.read_bytes() == b"previous" and os.listdir(tmp_path) == ["run.npz"]
    with atomic_path(path) as temp:
        np.savez(temp, x=np.arange(3))
    np.testing.assert_array_equal(np.load(path)["x"], np.arange(3))
    assert os.listdir(tmp_path) == ["run.npz"]


@pytest.mark.fast
@pytest.mark.parametrize("option, name", [("--out", "run.npz"), ("--plot", "run.png"), ("--gif", "run.gif")])
def test_an_existing_output_file_needs_force_and_nothing_runs_without_it(option, name, tmp_path, capsys):
    path = tmp_path / name
    path.write_bytes(b"previous")
    status = main(["simulate", "cart_pole", option, str(path)])
    captured = capsys.readouterr()
    one_line_error(captured.err, status, option, "already exists", "--force")
    assert captured.out == "" and "monte_carlo" not in captured.err  # nothing simulated
    assert path.read_bytes() == b"previous" and os.listdir(tmp_path) == [name]


@pytest.mark.fast
def test_resume_needs_out_and_an_interrupted_run_needs_resume_or_force(tmp_path, capsys):
    status = main(["simulate", "--resume"])
    one_line_error(capsys.readouterr().err, status, "--resume", "--out")
    parts = tmp_path / "run.npz.parts"
    parts.mkdir()
    (parts / "manifest.json").write_text("{}")
    status = main(["simulate", "cart_pole", "--out", str(tmp_path / "run.npz")])
    one_line_error(capsys.readouterr().err, status, "run.npz.parts", "interrupted run", "--resume", "--force")


def test_a_failed_write_keeps_the_previous_file_and_the_chunks_and_force_resume_replaces_it(tmp_path, capsys,
                                                                                              monkeypatch):
    out = tmp_path / "run.npz"
    out.write_bytes(b"previous")
    argv = ["simulate", "cart_pole", "--batch", "4", "--steps", "5", "--chunk", "2", "--out", str(out), "--force"]
    monkeypatch.setattr(np, "savez_compressed", _full_disk_after_some_bytes)
    status = main(argv)
    monkeypatch.undo()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 1 and "Traceback" not in err
    assert err.startswith("sodyn simulate: failed: cannot write --out") and "No space left on device" in err
    assert out.read_bytes() == b"previous"  # untouched, and no temporary left behind
    assert sorted(os.listdir(tmp_path)) == ["run.npz", "run.npz.parts"]
    assert sorted(os.listdir(tmp_path / "run.npz.parts")) == ["chunk_00000.npz", "chunk_00001.npz", "manifest.json"]

    assert main([*argv, "--resume"]) == 0  # both chunks loaded: nothing runs again, the file is replaced
    captured = capsys.readouterr()
    assert "compiling" not in captured.err and f"wrote        {out}" in captured.out
    assert os.listdir(tmp_path) == ["run.npz"]  # the chunk folder goes once run.npz holds everything
    data = np.load(out)
    assert data["final_q"].shape == (4, 2) and np.all(data["finite"])


INTERRUPTIBLE = """
import sys, time
from sodyn.simulate import store

save = store.ChunkStore.save

def save_then_wait(self, c, leaves):  # a slow run: Ctrl-C arrives after the first chunk is on disk
    save(self, c, leaves)
    for _ in range(1200):  # short sleeps: a SIGINT taken by another thread is seen within 0.1 s
        time.sleep(0.1)

store.ChunkStore.save = save_then_wait
from sodyn.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_keeps_the_finished_chunks_and_resume_gives_the_uninterrupted_result(tmp_path):
    """A real SIGINT once the first chunk file appears: exit 130 with one line, that chunk on disk,
    no run.npz; the same command with --resume then writes the uninterrupted run's file bit for bit."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    args = ["simulate", "cart_pole", "--batch", "6", "--steps", "10", "--chunk", "2", "--randomize", "0.1"]
    reference = subprocess.Popen([sys.executable, "-m", "sodyn", *args, "--out", str(tmp_path / "ref.npz")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out = tmp_path / "run.npz"
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE, *args, "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = tmp_path / "run.npz.parts" / "chunk_00000.npz"
    deadline = time.monotonic() + 240
    while not first.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=180)  # exit within 0.1 s of the signal; the bound is for a loaded machine
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("sodyn simulate: interrupted: the finished chunks are in"), err
    assert "--resume" in err and "Traceback" not in err
    assert sorted(os.listdir(tmp_path / "run.npz.parts")) == ["chunk_00000.npz", "manifest.json"]
    assert not out.exists()

    proc = run_sodyn(*args, "--out", str(out), "--resume")
    assert proc.returncode == 0, proc.stderr
    assert reference.wait(timeout=240) == 0, reference.stderr.read()
    got, want = np.load(out), np.load(tmp_path / "ref.npz")
    assert sorted(got.files) == sorted(want.files)
    for name in want.files:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


# ---------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------


def test_info_lists_bodies_joints_frames_masses_and_layout(capsys, hopper):
    assert main(["info"]) == 0  # the default model
    text = capsys.readouterr().out
    assert "pendulum_chain_7" in text and "frames (8):" in text and "tip" in text
    assert "q layout: nq = 7, v layout: nv = 7" in text

    assert main(["info", "humanoid_like"]) == 0
    text = capsys.readouterr().out
    assert "nv = 29" in text and "root" in text and "free" in text and "0:7" in text and "0:6" in text

    assert main(["info", str(hopper), "--floating-base"]) == 0
    text = capsys.readouterr().out
    assert "total mass 3 kg" in text
    foot = next(line for line in text.splitlines() if " foot " in line and "on leg" in line)
    assert "(0, 0, -0.5)" in foot


def test_info_into_a_closed_pipe_exits_quietly():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(["bash", "-o", "pipefail", "-c",
                           f"{sys.executable} -m sodyn info humanoid_like | head -1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Model('humanoid_like'") and proc.stdout.count("\n") == 1
    assert proc.stderr == ""

    # the reader is gone before the first write: every write fails with EPIPE
    child = subprocess.Popen([sys.executable, "-m", "sodyn", "info", "humanoid_like"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=300) == 0, err
    assert err == ""


# ---------------------------------------------------------------------------
# viewer
# ---------------------------------------------------------------------------


def test_viewer_draws_links_frames_and_contact_points_and_checks_q():
    from sodyn import viewer

    model = sd.models.pendulum_chain(n=3)
    contact, _ = contact_for(model)
    ax = viewer.draw_pose(model, np.zeros(3), contact=contact)
    assert len(ax.lines) == 1 + 2 + 1  # world -> link0 (of zero length), link0 -> link1 -> link2, link2 -> tip
    tip = np.asarray(ax.lines[-1].get_data_3d())[:, 1]
    np.testing.assert_allclose(tip, [0.0, 0.0, -0.9], atol=1e-6)
    assert len(ax.collections) == 1 + 3  # ground, body origins, frame origin (tip), contact point
    with pytest.raises(ValueError, match=r"shape \(T, 3\)"):
        viewer.draw_pose(model, np.zeros(4))
    with pytest.raises(ValueError, match="non-finite"):
        viewer.draw_pose(model, np.array([0.0, np.nan, 0.0]))
    np.testing.assert_array_equal(viewer.frame_indices(500, max_frames=60, fps=30, dt=1e-3),
                                  np.append(np.arange(0, 500, 33), 499))  # real time
    np.testing.assert_array_equal(viewer.frame_indices(500, max_frames=60), np.append(np.arange(0, 500, 9), 499))
