"""Dynamics algorithms, one module per family (kinematics, inverse dynamics, mass matrix,
articulated bodies)."""
