"""Built-in models that need no files."""

from sodyn.models.builtin import (
    alexiou_chain,
    cart_pole,
    cdi_satellite,
    double_pendulum,
    humanoid_like,
    pendulum_chain,
)
from sodyn.models.random_tree import random_tree

__all__ = [
    "alexiou_chain", "cart_pole", "cdi_satellite", "double_pendulum", "humanoid_like", "pendulum_chain", "random_tree",
]
