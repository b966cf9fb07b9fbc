"""Every notebook of ``notebooks/`` runs top to bottom in a fresh kernel at CI size
(:func:`notebooks.run_notebook`: its parameter cell overridden), with its outputs stripped in the
repository.  The notebooks' own asserts check their acceptance criteria unchanged:

* ``quickstart``: Talos and the MJCF humanoid drawn with their meshes;
* ``trajectory_optimization``: swing-up upright within 0.05 rad; the Panda's hand within 1 cm of
  the target, joints below 0.05 rad/s; no NaN (fewer L-BFGS iterations, a shorter GIF);
* ``learning_a_controller``: an MLP policy trained through differentiable cart-pole rollouts
  beats the clipped LQR of the simulator's own linearization on held-out starts;
* ``monte_carlo``: a pushed Solo12 under mass, inertia and friction uncertainty, statistics
  checked on a small batch (the horizon stays the notebook's: it must cover the recovery);
* ``operational_space_and_impacts``: the hand tracks a 10 cm circle within 1 mm under OSC in
  closed loop with the simulator; impacts rebound at −e times the approach speed with the energy
  loss ½(1 − e²) m_eff v².

Each case also counts the figures the notebook draws and checks the GIF it writes.
"""

from pathlib import Path

import pytest

from notebooks import NOTEBOOKS, images, run_notebook, stored_outputs

# notebook: (overrides of its parameter cell, at least this many figures, writes a GIF)
CASES = {
    "quickstart": ({}, 1, False),
    "trajectory_optimization": ({"CART_ITERS": 50, "PANDA_ITERS": 80, "GIF_FRAMES": 12}, 3, True),
    "learning_a_controller": ({"ITERS": 150, "BATCH": 32}, 3, True),
    "monte_carlo": ({"BATCH": 32}, 6, True),
    "operational_space_and_impacts": ({"GIF_FRAMES": 6}, 4, True),
}


def test_every_notebook_has_a_case():
    assert sorted(p.stem for p in Path(NOTEBOOKS).glob("*.ipynb")) == sorted(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_notebook_runs(name, tmp_path):
    overrides, min_images, writes_gif = CASES[name]
    assert stored_outputs(name) == 0, "notebooks are stored with outputs stripped"
    gif = tmp_path / f"{name}.gif"
    nb = run_notebook(name, **overrides, **({"GIF_PATH": str(gif)} if writes_gif else {}))
    assert images(nb) >= min_images
    if writes_gif:
        assert gif.stat().st_size > 0
