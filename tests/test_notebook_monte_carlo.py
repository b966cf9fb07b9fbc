"""The Monte Carlo notebook (a pushed Solo12 under mass, inertia and friction uncertainty) runs top
to bottom in a fresh kernel on a small batch; its own assertions check the statistics.

The horizon stays the notebook's (it must cover the recovery after the push): at this batch size
the steps cost far less than compiling the rollout."""

from notebooks import images, run_notebook, stored_outputs


def test_monte_carlo_notebook_runs(tmp_path):
    assert stored_outputs("monte_carlo") == 0, "notebooks are stored with outputs stripped"
    gif = tmp_path / "monte_carlo.gif"
    nb = run_notebook("monte_carlo", BATCH=32, GIF_PATH=str(gif))
    # Solo12's meshes at the start, histograms, mass–tilt scatter, envelopes over time, the final poses
    # overlaid and tiled (meshes), replayed samples
    assert images(nb) >= 6
    assert gif.stat().st_size > 0
