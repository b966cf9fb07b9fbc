"""Gradients through sliding contact of convex hulls (mesh geoms built with ``ModelBuilder``): a
hull box launched along a plane, and along the top of a hull table (fixed to the world, or free
and resting on the ground), pushed by an external force.  ``jax.grad`` of a scalar of the final
state with respect to the launch speed, the friction coefficient and the push, against central
differences in float64 (three random directions, relative 1e-5), and finite in float32.

Each scenario stays in one contact mode for the whole rollout, so that the final state is a
smooth function of the parameters: the box keeps sliding (its speed stays above 0.5 m/s: the
friction never sticks), its bottom face stays inside the support's face, and its four contact
slots stay loaded (no corner lifts off).  The box starts at its static sinking (its weight on
four slots of the default stiffness) with the launch velocity, so that nothing bounces.

On a hull table the float64 check is an expected failure (relative errors 1e-4 to 5e-4, the same
for any difference step): the mesh–mesh narrow phase differentiates a slot's position through
frozen witness weights on the reference face, so the point on the table stays put while the box
slides (the slot moves at half its speed in the gradient), and, on the free table, the frozen
normal does not turn with the table's face."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.simulate import ContactModel, State, rollout

jax.config.update("jax_enable_x64", True)

G = 9.81
HALF, MASS = np.array([0.1, 0.08, 0.03]), 1.0                   # the sliding box
TABLE, TABLE_MASS = np.array([0.5, 0.4, 0.05]), 5.0              # the table (half sizes); its top at z = 0
DT, STEPS = 1e-3, 100
X0 = np.array([1.0, 0.3, 1.0])          # launch speed (m/s, along (1, 0.3)), friction, push along x (N)



def _corners(half) -> np.ndarray:
    return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * half


def _box_inertia(mass, half) -> np.ndarray:
    return np.diag(mass * (np.sum(half ** 2) - half ** 2) / 3)


@functools.cache
def _scene(support: str, dtype=jnp.float64):
    """The model, its contact model, the start configuration, the box's body index and the slots
    between the box and its support."""
    b = sd.ModelBuilder(name=f"hull box on a {support}")
    b.add_body("box", None, joint="free", mass=MASS, inertia=_box_inertia(MASS, HALF))
    b.add_geom("box", "box", "mesh", vertices=_corners(HALF))
    if support == "table":
        b.add_geom("table", None, "mesh", vertices=_corners(TABLE), translation=(0.0, 0.0, -TABLE[2]))
    elif support == "free table":
        b.add_body("table", None, joint="free", mass=TABLE_MASS, inertia=_box_inertia(TABLE_MASS, TABLE))
        b.add_geom("table", "table", "mesh", vertices=_corners(TABLE))
    model = b.build(dtype=jnp.float64)
    if support != "table":
        model = sd.with_ground_plane(model, name="floor")
    model = model.astype(dtype)
    contact = ContactModel.from_model(model)
    sink = G / float(contact.stiffness) / 4                       # per kg on four slots
    q0 = np.array([0.0, 0.0, HALF[2] - MASS * sink, 1.0, 0.0, 0.0, 0.0])
    if support == "free table":
        table_sink = (MASS + TABLE_MASS) * sink
        q0[2] += 2 * TABLE[2] - table_sink
        q0 = np.concatenate([q0, [0.0, 0.0, TABLE[2] - table_sink, 1.0, 0.0, 0.0, 0.0]])
    names = model.geoms.names
    other = "floor" if support == "plane" else "table"
    slots = np.array([{names[a], names[c]} == {"box", other} for a, c in zip(contact.slots.geom1, contact.slots.geom2)])
    return model, contact, q0, model.body_names.index("box"), slots


def _final(x, scene):
    """Final x + y/2 + v_x/10 of the box after ``STEPS`` steps, launched at ``x[0]`` m/s along
    (1, 0.3) with friction ``x[1]`` on every pair and pushed along its x axis by ``x[2]`` N; and,
    as auxiliary output, its lowest speed, the least normal force of its four most loaded slots
    on the support (the bottom face's corners; a plane–mesh pair's other slots repeat them) and
    how far its bottom face reaches beyond a table-sized face under it (negative: inside)."""
    model, contact, q0, box, slots = scene
    dtype = x.dtype
    launch, mu, push = x
    contact = eqx.tree_at(lambda c: c.friction, contact, mu * jnp.ones_like(contact.friction))
    v = jnp.zeros(model.nv, dtype).at[6 * box + 3].set(launch).at[6 * box + 4].set(0.3 * launch)
    f = jnp.zeros((model.n_bodies, 6), dtype).at[box, 3].set(push)
    traj = rollout(model, State.initial(model, jnp.asarray(q0, dtype), v), None, DT, STEPS, contact=contact, f_ext=f)
    q, vel = traj.states.q[-1], traj.states.v[-1]
    speed = jnp.min(jnp.linalg.norm(traj.states.v[:, 6 * box + 3: 6 * box + 5], axis=-1))
    under = traj.states.q[:, 7:9] if model.n_bodies == 2 else jnp.zeros(2, dtype)      # the free table
    inside = jnp.max(jnp.abs(traj.states.q[:, 7 * box: 7 * box + 2] - under) + jnp.asarray(HALF[:2] - TABLE[:2], dtype))
    return (q[7 * box] + 0.5 * q[7 * box + 1] + 0.1 * vel[6 * box + 3],
            (speed, jnp.min(jnp.sort(jnp.abs(traj.contact_force[:, slots, 2]), axis=1)[:, -4]), inside))


@functools.cache
def _compiled(support: str, dtype):
    """``(value, value_and_grad)`` of :func:`_final` on ``support`` in ``dtype``, jitted."""
    scene = _scene(support, dtype)
    return (jax.jit(lambda x: _final(x, scene)[0]),
            jax.jit(jax.value_and_grad(lambda x: _final(x, scene), has_aux=True)))


@pytest.mark.parametrize("support", ["plane", "table", pytest.param("free table", marks=pytest.mark.slow)])
def test_gradient_through_hull_sliding_matches_central_differences(support):
    """A hull box sliding on a plane or on a hull table (module docstring): the gradient of its
    final position and speed with respect to (launch speed, friction, push) along three random
    directions equals central differences (float64, h = 1e-6, relative 1e-5), and the box slides
    in one contact mode all along."""
    value, grad_fn = _compiled(support, jnp.float64)
    x0 = jnp.asarray(X0)
    (_, (speed, least, inside)), grad = grad_fn(x0)
    assert float(speed) > 0.5                                # sliding all along: never sticks
    assert float(least) > 0.5 * MASS * G / 4                 # the four slots loaded: no corner lifts
    assert support == "plane" or float(inside) < -0.1        # 10 cm inside the table's top face
    for direction in np.random.default_rng(3).normal(size=(3, 3)):
        direction /= np.linalg.norm(direction)
        h = 1e-6
        fd = (value(x0 + h * direction) - value(x0 - h * direction)) / (2 * h)
        assert float(grad @ direction) == pytest.approx(float(fd), rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("support", ["table", pytest.param("free table", marks=pytest.mark.slow)])
def test_gradient_through_hull_sliding_is_finite_in_float32(support):
    """The same rollouts in float32: the gradient is finite and float32 throughout."""
    _, grad_fn = _compiled(support, jnp.float32)
    (_, (speed, _, _)), grad = grad_fn(jnp.asarray(X0, jnp.float32))
    assert grad.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(grad)))
    assert float(speed) > 0.5
