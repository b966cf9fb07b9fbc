"""URDF mimic joints for :func:`sodyn.io.urdf.load_urdf`: the linear coupling of
``mimic="couple"`` (:class:`MimicCoupling`, :class:`CoupledURDF`) and the check of ``<mimic>``
targets.  The engine itself has no mimic support; reduced dynamics are ``Gᵀ M G`` and ``Gᵀ τ``."""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import numpy as np

from sodyn.io import _xml, diagnostics
from sodyn.joints import nq_of, nv_of
from sodyn.model import Model


@dataclasses.dataclass(frozen=True)
class MimicCoupling:
    """Linear maps from the independent coordinates to the full ones (URDF mimic joints).

    ``q = A @ q_r + b`` and ``v = G @ v_r`` (also accelerations); the reduced mass matrix is
    ``Gᵀ M G`` and reduced generalised forces ``Gᵀ τ``.  A mimic joint follows
    ``q_j = multiplier · q_m + offset`` (chains of mimics are resolved).  Only one-dof joints
    can mimic or be mimicked.
    """

    A: np.ndarray
    b: np.ndarray
    G: np.ndarray
    independent_joints: tuple[str, ...]
    mimic_joints: tuple[str, ...]

    def q_full(self, q_r):
        return q_r @ self.A.T + self.b

    def v_full(self, v_r):
        return v_r @ self.G.T

    def reduce_mass_matrix(self, M):
        return self.G.T @ M @ self.G

    def reduce_force(self, tau):
        return tau @ self.G


class CoupledURDF(NamedTuple):
    """What ``load_urdf(..., mimic="couple")`` returns."""

    model: Model
    coupling: MimicCoupling


def check_mimic_targets(doc: _xml.Document, joints: list, error: bool) -> None:
    """A ``<mimic>`` naming no joint of the file is an error, except with ``mimic="independent"``
    (where mimic tags do not enter the model, as in Pinocchio) without ``strict``: a warning."""
    names = {j.name for j in joints}
    bad = [j for j in joints if j.mimic is not None and j.mimic[0] not in names]
    for j in bad:
        if error:
            raise doc.error(j.el.find("mimic"), f"joint {j.name!r} mimics unknown joint {j.mimic[0]!r}")
    if bad:
        where = [f"{doc.where(j.el.find('mimic'))}: joint {j.name!r} mimics unknown joint {j.mimic[0]!r}"
                 for j in bad]
        warnings.warn(diagnostics.IgnoredElementWarning(
            "mimic tags naming no joint of the file (ignored: mimic='independent' keeps every joint "
            "independent; strict=True makes this an error):\n  " + "\n  ".join(where),
            tuple(f"line {doc.line(j.el.find('mimic'))}" for j in bad)), stacklevel=3)


def coupling(doc: _xml.Document, model: Model, joints: list) -> MimicCoupling:
    by_name = {j.name: j for j in joints}
    mimic = {j.name: j.mimic for j in joints if j.mimic is not None}
    for name, (target, _, _) in mimic.items():
        j = by_name[name]
        for jj in (j, by_name[target]):
            if jj.type not in ("revolute", "continuous", "prismatic"):
                raise doc.error(jj.el, f"mimic coupling needs one-dof joints; {jj.name!r} is {jj.type}")

    def resolve(name, depth=0):  # -> (independent joint, multiplier, offset)
        if name not in mimic:
            return name, 1.0, 0.0
        if depth > len(mimic):
            raise doc.error(by_name[name].el, f"mimic joints form a cycle through {name!r}")
        target, mult, off = mimic[name]
        root, m2, o2 = resolve(target, depth + 1)
        return root, mult * m2, mult * o2 + off

    indep = [n for n in model.joint_names if n not in mimic]
    q_cols, v_cols = {}, {}
    nq_r = nv_r = 0
    for n in indep:
        s = model.joint_q_slice(n)
        q_cols[n] = nq_r
        v_cols[n] = nv_r
        nq_r += s.stop - s.start
        nv_r += model.joint_v_slice(n).stop - model.joint_v_slice(n).start
    A, b, G = np.zeros((model.nq, nq_r)), np.zeros(model.nq), np.zeros((model.nv, nv_r))
    for n in model.joint_names:
        qs, vs = model.joint_q_slice(n), model.joint_v_slice(n)
        if n in mimic:
            root, mult, off = resolve(n)
            A[qs.start, q_cols[root]] = mult
            b[qs.start] = off
            G[vs.start, v_cols[root]] = mult
        else:
            k = model.joint_names.index(n)
            t = model.joint_types[k]
            A[qs, q_cols[n]: q_cols[n] + nq_of(t)] = np.eye(nq_of(t))
            G[vs, v_cols[n]: v_cols[n] + nv_of(t)] = np.eye(nv_of(t))
    return MimicCoupling(A, b, G, tuple(indep), tuple(n for n in model.joint_names if n in mimic))


__all__ = ["CoupledURDF", "MimicCoupling", "check_mimic_targets", "coupling"]
