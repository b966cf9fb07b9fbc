"""The trajectory-optimization notebook runs top to bottom in a fresh kernel at CI size: fewer
L-BFGS iterations and a shorter GIF.  Its own asserts check the acceptance criteria (swing-up
upright within 0.05 rad; Panda hand within 1 cm of the target, joints below 0.05 rad/s; no NaN)."""

from notebooks import images, run_notebook, stored_outputs

NAME = "trajectory_optimization"


def test_trajectory_optimization_notebook_runs(tmp_path):
    assert stored_outputs(NAME) == 0, "notebooks are stored with outputs stripped"
    gif = tmp_path / "swing_up.gif"
    nb = run_notebook(NAME, CART_ITERS=50, PANDA_ITERS=80, GIF_FRAMES=12, GIF_PATH=str(gif))
    assert images(nb) >= 3  # swing-up plots, reach plots, the Panda's meshes at the start and the end
    assert gif.stat().st_size > 0
