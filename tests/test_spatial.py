"""sodyn.spatial against explicit 6 × 6 matrices (tests/reference_dynamics.py), float64.

Each function is checked on a batch of random poses, vectors and inertias (leading axis 5):
the structured 3 × 3-block formulas against Featherstone's ``ᶜX_p = [[Rᵀ, 0], [−Rᵀ p~, Rᵀ]]``,
``v×``, ``v×*`` and the rigid-body inertia of eq. 2.63, and the quaternion maps against
Rodrigues' formula and each other.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import reference_dynamics as ref

from sodyn import spatial

jax.config.update("jax_enable_x64", True)

B = 5


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    quat = rng.normal(size=(B, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    a = rng.normal(size=(B, 6, 6))
    mass = rng.uniform(0.5, 2.0, size=B)
    roots = rng.normal(size=(B, 3, 3))
    return dict(
        quat=quat, rot=np.stack([ref.quaternion_rotation(x) for x in quat]), p=rng.normal(size=(B, 3)),
        m=rng.normal(size=(B, 6)), f=rng.normal(size=(B, 6)), sym=a + np.swapaxes(a, 1, 2), mass=mass,
        com=rng.normal(size=(B, 3)), inertia=roots @ np.swapaxes(roots, 1, 2) + np.eye(3),
        axis=(ax := rng.normal(size=(B, 3))) / np.linalg.norm(ax, axis=1, keepdims=True),
        angle=rng.uniform(-4.0, 4.0, size=B),
    )


def xs(d) -> np.ndarray:
    return np.stack([ref.motion_transform(r, p) for r, p in zip(d["rot"], d["p"])])


def close(actual, expected) -> None:
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12, atol=1e-12)


def test_rotations(data):
    close(spatial.quat_to_rotation(data["quat"]), data["rot"])
    close(spatial.quat_to_rotation(3.0 * data["quat"]), data["rot"])  # normalises first
    close(spatial.axis_angle_to_rotation(data["axis"], data["angle"]),
          np.stack([ref.rotation_about(a, t) for a, t in zip(data["axis"], data["angle"])]))
    omega = data["axis"] * data["angle"][:, None]
    rodrigues = spatial.axis_angle_to_rotation(data["axis"], data["angle"])
    close(spatial.quat_to_rotation(spatial.quat_exp(omega)), rodrigues)
    sign = np.sign(data["quat"][:, :1])
    close(spatial.rotation_to_quat(data["rot"]), sign * data["quat"])  # w ≥ 0 branch
    close(spatial.quat_exp(spatial.quat_log(data["quat"])), sign * data["quat"])
    product = spatial.quat_multiply(data["quat"], spatial.quat_conjugate(np.roll(data["quat"], 1, axis=0)))
    close(spatial.quat_to_rotation(product), data["rot"] @ np.swapaxes(np.roll(data["rot"], 1, axis=0), 1, 2))


def test_cross_products(data):
    close(spatial.skew(data["p"]), np.stack([ref.skew(p) for p in data["p"]]))
    close(spatial.motion_cross(data["m"], data["f"]), np.einsum("bij,bj->bi", np.stack([ref.crm(v) for v in data["m"]]),
                                                                 data["f"]))
    close(spatial.force_cross(data["m"], data["f"]), np.einsum("bij,bj->bi", np.stack([ref.crf(v) for v in data["m"]]),
                                                                data["f"]))


def test_motion_and_force_transforms(data):
    x = xs(data)
    r, p = data["rot"], data["p"]
    close(spatial.motion_transform_matrix(r, p), x)
    close(spatial.motion_to_child(r, p, data["m"]), np.einsum("bij,bj->bi", x, data["m"]))
    close(spatial.motion_to_parent(r, p, data["m"]), np.linalg.solve(x, data["m"][..., None])[..., 0])
    close(spatial.force_to_parent(r, p, data["f"]), np.einsum("bji,bj->bi", x, data["f"]))
    close(spatial.force_to_child(r, p, data["f"]), np.linalg.solve(np.swapaxes(x, 1, 2), data["f"][..., None])[..., 0])
    ri, pi = spatial.inverse_transform(r, p)
    close(spatial.motion_transform_matrix(ri, pi), np.linalg.inv(x))
    r2, p2 = np.roll(r, 1, axis=0), np.roll(p, 1, axis=0)
    rc, pc = spatial.compose(r, p, r2, p2)
    close(spatial.motion_transform_matrix(rc, pc), xs(dict(rot=r2, p=p2)) @ x)  # ᶜX_a = ᶜX_b ᵇX_a


def test_inertia_congruences(data):
    x = xs(data)
    xt = np.swapaxes(x, 1, 2)
    close(spatial.inertia_to_parent(data["rot"], data["p"], data["sym"]), xt @ data["sym"] @ x)
    close(spatial.compliance_to_child(data["rot"], data["p"], data["sym"]), x @ data["sym"] @ xt)


def test_rigid_body_inertia(data):
    expected = np.stack([ref.rigid_body_inertia(*args) for args in zip(data["mass"], data["com"], data["inertia"])])
    close(spatial.spatial_inertia(data["mass"], data["com"], data["inertia"]), expected)
    params = spatial.inertia_parameters(data["mass"], data["com"], data["inertia"])
    close(spatial.inertia_from_parameters(*params), expected)
    close(spatial.apply_inertia(*params, data["m"]), np.einsum("bij,bj->bi", expected, data["m"]))
    # about the world origin, in world axes, for a body at pose (R, p): ᵇX_wᵀ I ᵇX_w
    world = spatial.world_inertia_parameters(data["mass"], data["com"], data["inertia"], data["rot"], data["p"])
    x = xs(data)
    close(spatial.inertia_from_parameters(*world), np.swapaxes(x, 1, 2) @ expected @ x)


@pytest.mark.parametrize("n", [1, 3, 6, 4])
def test_spd_inverse(n):
    a = np.random.default_rng(n).normal(size=(B, n, n))
    spd = a @ np.swapaxes(a, 1, 2) + n * np.eye(n)
    close(spatial.spd_inverse(spd), np.linalg.inv(spd))
