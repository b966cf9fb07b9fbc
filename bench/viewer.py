"""How long the mesh viewer takes: a 200-frame GIF (and MP4) of Talos, a still image, a Monte
Carlo overlay, on this machine's CPU (matplotlib's Agg canvas; no display, no GPU).

The trajectory is kinematic (every joint swings, the base walks 1 m forward), so that only
drawing is timed: :func:`sodyn.viewer.save_animation` from the built scene to the written file,
including the jitted forward kinematics of every frame (compiled in the first call) and the
encoding.  The table replaces the ``<!-- viewer -->`` section of ``--out``::

    python bench/viewer.py                          # Talos, 200 frames, into bench/results.md
    python bench/viewer.py --frames 50 --out /tmp/r.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import provenance  # noqa: E402

import sodyn as sd  # noqa: E402
from sodyn import viewer  # noqa: E402
from sodyn.io.visuals import load_visuals  # noqa: E402


def trajectory(model, q0: np.ndarray, frames: int) -> np.ndarray:
    t = np.linspace(0.0, 2.0, frames)
    qs = np.repeat(q0[None], frames, axis=0)
    qs[:, 7:] += 0.3 * np.sin(2 * np.pi * t)[:, None] * np.cos(np.arange(model.nq - 7))[None]
    qs[:, 0] += 0.5 * t
    return qs


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="talos_full_v2")
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--out", default=os.path.join(HERE, "results.md"))
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = sd.example_robot(args.robot)
        model, t_model = timed(lambda: robot.load(floating_base=True))
    visuals, t_visuals = timed(lambda: load_visuals(robot))
    scene, t_scene = timed(lambda: viewer.Scene.build(model, visuals))
    still_scene, t_still_scene = timed(lambda: viewer.Scene.build(model, visuals, max_triangles=60_000))
    q0 = np.asarray(model.q_neutral, np.float64).copy()
    q0[2] = 1.08
    qs = trajectory(model, q0, args.frames)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("gif", "mp4"):
            path = os.path.join(tmp, f"talos.{name}")
            _, seconds = timed(lambda: viewer.save_animation(scene, qs, path, dt=0.01, max_frames=args.frames))
            rows.append((f"{args.frames}-frame {name.upper()}, 640 x 640, {scene.n_triangles} triangles", seconds,
                         seconds / args.frames, os.path.getsize(path) / 1e6))
        _, seconds = timed(lambda: viewer.save_image(os.path.join(tmp, "talos.png"), viewer.render(still_scene, q0)))
        rows.append((f"still image, 800 x 640, {still_scene.n_triangles} triangles", seconds, seconds,
                     os.path.getsize(os.path.join(tmp, "talos.png")) / 1e6))
        samples = trajectory(model, q0, 100)[np.random.default_rng(0).permutation(100)]
        _, seconds = timed(lambda: viewer.render_samples(scene, samples))
        rows.append(("100 samples overlaid, 800 x 640 (s per sample)", seconds, seconds / 100, float("nan")))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"{datetime.date.today()}, commit `{provenance.commit()}`, {provenance.machine()}, load average {load:.2f}; "
        f"`python bench/viewer.py --frames {args.frames}`.",
        "",
        f"### Mesh viewer: {args.robot} ({len(visuals)} visual meshes, "
        f"{sum(v.n_triangles for v in visuals)} triangles in the files)",
        "",
        f"Load: model {t_model:.2f} s, visuals {t_visuals:.2f} s; scene (decimation) {t_scene:.2f} s "
        f"({scene.n_triangles} triangles), {t_still_scene:.2f} s ({still_scene.n_triangles}). Rendering: "
        "`sodyn.viewer` (matplotlib Agg, painter's algorithm), times include the forward kinematics "
        "(one jitted vmap, compiled on the first call) and the encoding.",
        "",
        "| output | total s | s per frame | file MB |",
        "|---|---|---|---|",
        *[f"| {what} | {f'**{total:.1f}**' if i == 0 else f'{total:.1f}'} | {per:.3f} | "
          f"{'–' if np.isnan(size) else f'{size:.2f}'} |" for i, (what, total, per, size) in enumerate(rows)],
        "",
    ]
    section = "\n".join(lines)
    print(section)
    provenance.write_section(args.out, "<!-- viewer -->", "<!-- /viewer -->", section)


if __name__ == "__main__":
    main()
