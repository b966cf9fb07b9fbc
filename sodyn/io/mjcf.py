"""MJCF import through the ``mujoco`` package (to be written): see ``load_mjcf``."""

from __future__ import annotations

from sodyn.model import Model


def load_mjcf(path_or_xml, **options) -> Model:
    """Load an MJCF file (compiled by ``mujoco``) into a :class:`sodyn.Model`."""
    raise NotImplementedError("load_mjcf is being written")
