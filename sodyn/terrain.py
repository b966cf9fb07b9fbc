r"""Height-field terrains from parameters, for :func:`sodyn.with_height_field`: rough ground,
stairs, a slope and a bowl, each a :class:`HeightField` ``(elevation, size)``.

A terrain is a grid of ``nrow × ncol`` samples over ``[−x₀, x₀] × [−y₀, y₀]`` (row along ``y``,
column along ``x``: sample ``(r, c)`` at ``x_c = −x₀ + 2x₀ c/(ncol − 1)``,
``y_r = −y₀ + 2y₀ r/(nrow − 1)``) of heights ``h ≥ 0`` above the geom's origin, stored as
MuJoCo does: ``elevation = h / z_top`` in ``[0, 1]`` with ``size = (x₀, y₀, z_top, z_base)``
(:class:`sodyn.model_data.HeightFields`).  The grid and ``size`` are static (they fix the
program's shapes); the shape parameters (amplitude, wavelength, angle, step height and depth,
depth, the random key) are ordinary JAX values, so a terrain can be drawn per Monte Carlo sample
under ``jax.vmap`` and installed with :func:`sodyn.set_elevation` (or built into each sample's
model with :func:`sodyn.with_height_field`), and differentiated.  ``z_top`` defaults to the
terrain's largest height when the parameters are concrete; give it (at least the largest height
any sample reaches) when they are traced.

The surface between samples is the triangulated grid (each cell two triangles), so a sharp
feature (a stair's riser) becomes a slope one cell wide: choose the cell size well below the
features' sizes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array


class HeightField(NamedTuple):
    """A terrain for :func:`sodyn.with_height_field`: normalised ``elevation (nrow, ncol)`` and
    ``size = (x₀, y₀, z_top, z_base)`` (module docstring)."""

    elevation: Array
    size: tuple[float, float, float, float]


def _grid(nrow: int, ncol: int, half_x: float, half_y: float, what: str) -> tuple[Array, Array]:
    """Sample coordinates ``(x (nrow, ncol), y (nrow, ncol))``."""
    for name, n in (("nrow", nrow), ("ncol", ncol)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
            raise ValueError(f"terrain.{what}: {name} must be an integer >= 2, got {n!r}")
    for name, h in (("half_x", half_x), ("half_y", half_y)):
        if not (math.isfinite(float(h)) and float(h) > 0):
            raise ValueError(f"terrain.{what}: {name} must be finite and positive, got {h!r}")
    x = jnp.linspace(-half_x, half_x, ncol)
    y = jnp.linspace(-half_y, half_y, nrow)
    return jnp.broadcast_to(x[None, :], (nrow, ncol)), jnp.broadcast_to(y[:, None], (nrow, ncol))


def _largest(value, what: str, name: str) -> float:
    """A concrete positive ``z_top`` from ``value`` (the terrain's largest height)."""
    try:
        z = float(value)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError, TypeError):
        raise ValueError(f"terrain.{what}: {name} is traced (randomized); give z_top=, at least the largest "
                         "height any sample reaches") from None
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"terrain.{what}: the largest height must be finite and positive, got {z!r}; check {name}")
    return z


def from_heights(heights, half_x: float, half_y: float, *, z_top: float | None = None,
                 base: float = 0.1) -> HeightField:
    """A :class:`HeightField` from heights ``(nrow, ncol)`` in metres, all in ``[0, z_top]``
    (default ``z_top``: their largest; concrete heights are checked), over
    ``[−half_x, half_x] × [−half_y, half_y]``, with the solid ``base`` metres deep below the
    origin.  A surface with negative heights: shift it up and place the geom lower."""
    if z_top is None:
        z_top = _largest(jnp.max(heights), "from_heights", "heights")
    try:
        h = np.asarray(heights, np.float64)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        h = None
    if h is not None and (h.ndim != 2 or not np.all(np.isfinite(h)) or h.min() < 0 or h.max() > z_top * (1 + 1e-12)):
        raise ValueError(f"terrain.from_heights: heights must be a finite 2-D grid within [0, z_top = {z_top}], got "
                         f"shape {h.shape}" + (f" and range [{h.min():.6g}, {h.max():.6g}]" if h.size else ""))
    _grid(*jnp.shape(heights), half_x, half_y, "from_heights")
    return HeightField(jnp.asarray(heights) / z_top, (float(half_x), float(half_y), float(z_top), float(base)))


def rough(key: Array, *, nrow: int, ncol: int, half_x: float, half_y: float, amplitude, wavelength,
          modes: int = 32, z_top: float | None = None, base: float = 0.1) -> HeightField:
    r"""Smooth random ground: heights from 0 to ``amplitude`` (m) with features about
    ``wavelength`` (m) across.  A sum of ``modes`` plane waves
    ``n(p) = Σ_k cos(2π u_k·p/λ_k + φ_k)`` with random unit directions ``u_k``, wavelengths
    ``λ_k`` uniform in ``[wavelength, 2 wavelength]`` and phases ``φ_k`` (from ``key``), rescaled
    to ``h = amplitude (n − min n)/(max n − min n)`` over the grid.  ``key``, ``amplitude`` and
    ``wavelength`` may be traced (one terrain per sample); then give ``z_top ≥ amplitude``."""
    x, y = _grid(nrow, ncol, half_x, half_y, "rough")
    if z_top is None:
        z_top = _largest(amplitude, "rough", "amplitude")
    k_dir, k_len, k_phase = jax.random.split(key, 3)
    angle = jax.random.uniform(k_dir, (modes,), maxval=2.0 * math.pi)
    lam = wavelength * (1.0 + jax.random.uniform(k_len, (modes,)))
    phase = jax.random.uniform(k_phase, (modes,), maxval=2.0 * math.pi)
    arg = (jnp.cos(angle) * x[..., None] + jnp.sin(angle) * y[..., None]) * (2.0 * math.pi / lam) + phase
    n = jnp.sum(jnp.cos(arg), axis=-1)
    h = amplitude * (n - jnp.min(n)) / jnp.maximum(jnp.max(n) - jnp.min(n), jnp.finfo(n.dtype).tiny)
    return HeightField(h / z_top, (float(half_x), float(half_y), float(z_top), float(base)))


def stairs(*, nrow: int, ncol: int, half_x: float, half_y: float, step_height, step_depth, steps: int,
           start=0.0, z_top: float | None = None, base: float = 0.1) -> HeightField:
    """Stairs rising along ``+x``: flat at height 0 for ``x < start``, then ``steps`` steps of
    ``step_height`` (m) rise and ``step_depth`` (m) run, the top landing at
    ``steps · step_height`` beyond; ``h = step_height · clip(⌊(x − start)/step_depth⌋ + 1, 0,
    steps)``.  Each riser is a slope one cell wide (module docstring).  ``step_height``,
    ``step_depth`` and ``start`` may be traced; ``steps`` is static."""
    x, _ = _grid(nrow, ncol, half_x, half_y, "stairs")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"terrain.stairs: steps must be a positive integer, got {steps!r}")
    if z_top is None:
        z_top = _largest(step_height * steps, "stairs", "step_height")
    h = step_height * jnp.clip(jnp.floor((x - start) / step_depth) + 1.0, 0.0, steps)
    return HeightField(h / z_top, (float(half_x), float(half_y), float(z_top), float(base)))


def slope(*, nrow: int, ncol: int, half_x: float, half_y: float, angle, z_top: float | None = None,
          base: float = 0.1) -> HeightField:
    """A plane rising along ``+x`` at ``angle`` (rad, in ``[0, π/2)``): ``h = tan(angle)(x + x₀)``,
    0 at ``x = −x₀``.  ``angle`` may be traced."""
    x, _ = _grid(nrow, ncol, half_x, half_y, "slope")
    if z_top is None:
        z_top = _largest(jnp.tan(angle) * 2.0 * half_x, "slope", "angle")
    return HeightField(jnp.tan(angle) * (x + half_x) / z_top, (float(half_x), float(half_y), float(z_top), float(base)))


def bowl(*, nrow: int, ncol: int, half_x: float, half_y: float, depth, radius=None, z_top: float | None = None,
         base: float = 0.1) -> HeightField:
    """A paraboloid bowl centred on the origin: ``h = depth · min(|p|²/radius², 1)`` (0 at the
    centre, its lowest point; flat at ``depth`` beyond ``radius``, default ``min(x₀, y₀)``).
    ``depth`` and ``radius`` may be traced."""
    x, y = _grid(nrow, ncol, half_x, half_y, "bowl")
    radius = min(half_x, half_y) if radius is None else radius
    if z_top is None:
        z_top = _largest(depth, "bowl", "depth")
    h = depth * jnp.minimum((x * x + y * y) / (radius * radius), 1.0)
    return HeightField(h / z_top, (float(half_x), float(half_y), float(z_top), float(base)))


__all__ = ["HeightField", "bowl", "from_heights", "rough", "slope", "stairs"]
