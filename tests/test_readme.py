"""The README stays true: its Python tour runs as written and its commands are the ones CI runs."""

import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_the_tour_runs_as_written():
    (tour,) = _blocks("python")
    namespace: dict = {}
    exec(compile(tour, "README.md", "exec"), namespace)
    assert np.isfinite(float(namespace["value"]))
    assert namespace["traj"].states.q.shape == (50, 2)
    result = namespace["result"]
    assert result.batch == 64 and bool(np.all(result.finite))
    assert np.all(np.isfinite(result.stats["final_q"].std))


def test_the_commands_are_the_ones_ci_runs():
    (commands,) = _blocks("bash")
    lines = [line.split("#")[0].strip() for line in commands.splitlines()]
    ci = (ROOT / ".ci" / "run").read_text()
    install = next(x for x in lines if x.startswith("pip install"))
    assert install in ci
    for test_command in (x for x in lines if x.startswith("pytest")):
        assert test_command in ci, test_command
    assert "python -m sodyn simulate" in lines  # run end to end by tests/test_cli.py
    for notebook in re.findall(r"\(notebooks/(\w+)\.ipynb\)", README):
        assert (ROOT / "notebooks" / f"{notebook}.ipynb").is_file(), notebook
        assert f'"{notebook}":' in (ROOT / "tests" / "test_notebooks.py").read_text(), notebook  # run by CI
