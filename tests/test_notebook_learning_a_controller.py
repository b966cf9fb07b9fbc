"""The learning-a-controller notebook runs top to bottom at CI size: an MLP policy trained through
differentiable cart-pole rollouts beats the clipped LQR of the simulator's own linearization on
held-out starts (the notebook's own asserts), and it draws its figures and writes its GIF."""

from notebooks import images, run_notebook, stored_outputs


def test_learning_a_controller_notebook(tmp_path):
    assert stored_outputs("learning_a_controller") == 0, "notebooks are stored with outputs stripped"
    gif = tmp_path / "policy.gif"
    nb = run_notebook("learning_a_controller", ITERS=150, BATCH=32, GIF_PATH=str(gif))
    assert images(nb) >= 3
    assert gif.stat().st_size > 0
