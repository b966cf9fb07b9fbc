"""The operational-space-control and impacts notebook runs top to bottom in a fresh kernel at CI
size (a GIF of a few frames); its own asserts check the acceptance criteria unchanged: the
hand tracks a 10 cm circle within 1 mm under OSC in closed loop with the simulator, and the
impacts rebound at −e times the approach speed with the energy loss ½(1 − e²) m_eff v²."""

from notebooks import images, run_notebook, stored_outputs

NAME = "operational_space_and_impacts"


def test_operational_space_and_impacts_notebook_runs(tmp_path):
    assert stored_outputs(NAME) == 0, "notebooks are stored with outputs stripped"
    gif = tmp_path / "osc.gif"
    nb = run_notebook(NAME, GIF_FRAMES=6, GIF_PATH=str(gif))
    assert images(nb) >= 4    # tracking, impact, bounces, the Panda's meshes at home
    assert gif.stat().st_size > 0
