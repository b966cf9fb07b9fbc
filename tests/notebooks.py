"""Run a notebook of ``notebooks/`` in a fresh kernel, as CI does.

Each notebook has one code cell tagged ``parameters`` (sizes, iteration counts, whether to write
a GIF).  :func:`run_notebook` inserts a cell after it that overrides some of those names, so CI
runs a smaller problem, and executes every cell; a failing cell, an ``assert`` in the notebook
included, fails the test.  The notebooks' assertions are the same in CI and at full size.
The kernel is this interpreter's (``ipykernel``), started with this process's environment, so
it sees the XLA flags ``tests/conftest.py`` set; figures come back as PNG outputs (the inline
backend needs no display).  Without ``nbformat`` and ``nbclient`` (the ``test`` extra), the
notebook tests are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def parameters_cell_index(nb: nbformat.NotebookNode) -> int:
    """Index of the cell tagged ``parameters`` (one per notebook)."""
    found = [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(found) != 1:
        raise ValueError(f"a notebook needs exactly one cell tagged 'parameters', found {len(found)}")
    return found[0]


def run_notebook(name: str, timeout: int = 900, **overrides) -> nbformat.NotebookNode:
    """Execute ``notebooks/<name>.ipynb`` with ``overrides`` assigned after its parameter cell."""
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    if overrides:
        source = "\n".join(f"{k} = {v!r}" for k, v in overrides.items())
        nb.cells.insert(parameters_cell_index(nb) + 1, nbformat.v4.new_code_cell(source))
    env = {"TQDM_DISABLE": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOKS)}})
        client.execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def stored_outputs(name: str) -> int:
    """How many outputs the stored notebook carries (the repository keeps them stripped)."""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    return sum(len(c.get("outputs", [])) + (c.get("execution_count") is not None) for c in nb.cells
               if c.cell_type == "code")


def images(nb: nbformat.NotebookNode) -> int:
    """Number of PNG images among an executed notebook's outputs."""
    return sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
