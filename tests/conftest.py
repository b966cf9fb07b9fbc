"""Shared test configuration: float64 everywhere (oracle comparisons need it)."""

import jax

jax.config.update("jax_enable_x64", True)
