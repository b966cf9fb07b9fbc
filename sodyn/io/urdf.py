"""URDF import (to be written): see ``load_urdf``."""

from __future__ import annotations

from sodyn.model import Model


def load_urdf(path_or_xml, floating_base: bool = False, package_dirs=None, **options) -> Model:
    """Load a URDF file or XML string into a :class:`sodyn.Model`."""
    raise NotImplementedError("load_urdf is being written")
