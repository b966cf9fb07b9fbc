"""The quickstart notebook runs top to bottom in a fresh kernel."""

from notebooks import images, run_notebook, stored_outputs


def test_quickstart_notebook_runs():
    assert stored_outputs("quickstart") == 0, "notebooks are stored with outputs stripped"
    nb = run_notebook("quickstart")
    assert images(nb) >= 1  # Talos and the MJCF humanoid drawn with their meshes
