"""Model import (Pinocchio models, URDF, MJCF) and conversions between the q/v conventions of
sodyn, Pinocchio and MuJoCo."""

from sodyn.io.pinocchio import (
    from_pinocchio,
    q_from_pinocchio,
    q_to_pinocchio,
    v_from_pinocchio,
    v_to_pinocchio,
)

__all__ = ["from_pinocchio", "q_from_pinocchio", "q_to_pinocchio", "v_from_pinocchio", "v_to_pinocchio"]
