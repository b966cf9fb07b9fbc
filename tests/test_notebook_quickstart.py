"""The quickstart notebook runs top to bottom in a fresh kernel."""

from notebooks import run_notebook, stored_outputs


def test_quickstart_notebook_runs():
    assert stored_outputs("quickstart") == 0, "notebooks are stored with outputs stripped"
    run_notebook("quickstart")
