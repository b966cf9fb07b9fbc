"""Collision between geoms: the candidate pairs of a model (MuJoCo's filtering), the narrow
phase of every pair of primitives, and :func:`collide`, the contacts of a configuration."""
