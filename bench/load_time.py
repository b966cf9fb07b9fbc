"""Load time of a long serial chain (issue 46): ``python bench/load_time.py [--links 5000]``.

Builds a URDF of ``--links`` revolute links in a single chain and times :func:`sodyn.load_urdf`
(parse, topology compile, model build, load-time diagnostics) on it, best of ``--repeat`` runs.
Prints one line per run and the best time; kept apart from the other benchmarks, which time
the dynamics.
"""

from __future__ import annotations

import argparse
import time
import warnings


def chain_urdf(n: int) -> str:
    """A URDF string: ``n`` unit-mass links in one chain of z-revolute joints."""
    inertial = ('<inertial><mass value="1"/><origin xyz="0 0 0.05"/>'
                '<inertia ixx="0.01" iyy="0.01" izz="0.005" ixy="0" ixz="0" iyz="0"/></inertial>')
    parts = ['<robot name="chain"><link name="base"/>']
    parent = "base"
    for k in range(n):
        parts.append(f'<link name="l{k}">{inertial}</link>')
        parts.append(f'<joint name="j{k:05d}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
                     '<origin xyz="0 0 0.1" rpy="0.1 0 0"/><axis xyz="0 0 1"/>'
                     '<limit lower="-3" upper="3" effort="10" velocity="5"/></joint>')
        parent = f"l{k}"
    parts.append("</robot>")
    return "".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    import sodyn as sd

    xml = chain_urdf(args.links)
    times = []
    for r in range(args.repeat):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = sd.load_urdf(xml)
        times.append(time.perf_counter() - t0)
        print(f"run {r}: load_urdf of a {args.links}-link chain (nv={model.nv}): {times[-1]:.2f} s")
    print(f"best: {min(times):.2f} s")


if __name__ == "__main__":
    main()
