"""Checks that hold under ``jax.jit`` (``sodyn.simulate.checks``) and the one dtype policy of
states, models and time (issue 46).

Oracles: the documented error messages (which argument, which step, which quantity came
first), exact float32 arithmetic of ``k·dt`` and the float32 range.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.simulate import State, rollout, step

jax.config.update("jax_enable_x64", True)


@pytest.fixture(scope="module")
def cart():
    return sd.models.cart_pole()


@pytest.fixture(scope="module")
def humanoid():
    return sd.models.humanoid_like()


def _raises(fn, *args, match: str):
    """``fn(*args)`` raises an error whose text contains ``match`` (a regex)."""
    with pytest.raises(Exception, match=match):
        jax.block_until_ready(fn(*args))


# ---------------------------------------------------------------------------
# checks under jit
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_bad_dt_raises_under_jit_for_step_and_rollout(cart):
    s0 = State.initial(cart)
    one = jax.jit(lambda s, dt: step(cart, s, None, dt))
    many = jax.jit(lambda s, dt: rollout(cart, s, None, dt, 3).states.q)
    off = jax.jit(lambda s, dt: step(cart, s, None, dt, checks="off"))
    assert np.isfinite(float(one(s0, 1e-3).t))
    for dt in (-1e-3, 0.0, float("nan"), float("inf")):
        _raises(one, s0, dt, match="dt must be a positive, finite time step")
        _raises(many, s0, dt, match="dt must be a positive, finite time step")
        with pytest.raises(ValueError, match="dt must be a positive"):  # a concrete dt: at once
            step(cart, s0, None, dt)
        assert off(s0, dt).q.shape == (2,)  # the switch turns the check off


@pytest.mark.fast
def test_zero_or_non_finite_quaternion_raises_under_jit(humanoid):
    s0 = State.initial(humanoid)
    one = jax.jit(lambda s: step(humanoid, s, None, 1e-3).q)
    many = jax.jit(lambda s: rollout(humanoid, s, None, 1e-3, 2).states.q)
    for value in (0.0, jnp.nan):
        bad = State(s0.q.at[3:7].set(value), s0.v, s0.t)
        _raises(one, bad, match="quaternion of joint 'root' is zero or not finite")
        _raises(many, bad, match="quaternion of joint 'root' is zero or not finite")
    # a finite non-unit quaternion is a valid rotation (integration renormalizes)
    assert np.all(np.isfinite(one(State(s0.q.at[3:7].multiply(2.0), s0.v, s0.t))))


@pytest.mark.fast
def test_non_finite_controls_raise_under_jit_naming_index_and_step(cart):
    s0 = State.initial(cart)
    u = jnp.zeros((10, 2)).at[4, 1].set(jnp.nan)
    many = jax.jit(lambda s, u: rollout(cart, s, u, 1e-3, 10).states.q)
    _raises(many, s0, u, match=r"non-finite control 1 at step 5")
    one = jax.jit(lambda s, u: step(cart, s, u, 1e-3).q)
    _raises(one, s0, u[4], match=r"non-finite control 1")
    policy = jax.jit(lambda s: rollout(cart, s, lambda p, t, s: jnp.where(t > 0.0025, jnp.nan, 0.0) * jnp.ones(2),
                                       1e-3, 10).states.q)
    _raises(policy, s0, match=r"non-finite control 0 \(from the policy\) at step 4")


@pytest.mark.fast
def test_checked_rollout_works_under_jit_and_blames_the_first_bad_quantity(cart):
    """A NaN control on dof 1 at step 7 is named as such, not as the joint its NaN reaches
    first; a state that blows up by itself is named by its joint and step."""
    s0 = State.initial(cart)
    u = jnp.zeros((10, 2)).at[6, 1].set(jnp.nan)
    checked = jax.jit(lambda s, u: rollout(cart, s, u, 1e-3, 10, checked=True))
    _raises(checked, s0, u, match=r"non-finite control 1 at step 7")
    with pytest.raises(FloatingPointError, match=r"non-finite control 1 at step 7"):
        rollout(cart, s0, u, 1e-3, 10, checked=True)
    # a finite but huge velocity overflows the state: named by joint, at the step it happened
    fast = State(s0.q, s0.v.at[1].set(1e200), s0.t)
    with pytest.raises(FloatingPointError, match=r"non-finite (q|v) of joint '\w+' at step 1 "):
        rollout(cart, fast, None, 1e-3, 5, checks="full")
    ok = checked(s0, jnp.zeros((10, 2)))
    assert ok.states.q.shape == (10, 2) and np.all(np.isfinite(ok.states.q))
    # vmap and grad go through the checks
    batch = jax.vmap(lambda v: rollout(cart, State.initial(cart, None, v), None, 1e-3, 3, checked=True).states.q[-1])
    assert batch(jnp.ones((4, 2))).shape == (4, 2)
    g = jax.grad(lambda u: jnp.sum(rollout(cart, s0, u, 1e-3, 10, checked=True).states.q[-1] ** 2))(
        jnp.ones((10, 2)))
    assert np.all(np.isfinite(g))


@pytest.mark.fast
def test_bad_checks_option(cart):
    with pytest.raises(ValueError, match="checks must be one of"):
        step(cart, State.initial(cart), None, 1e-3, checks="some")


# ---------------------------------------------------------------------------
# one dtype policy
# ---------------------------------------------------------------------------


@pytest.mark.fast
def test_state_takes_the_models_dtype(cart):
    m32 = cart.astype(jnp.float32)
    s = State.initial(m32, jnp.zeros(2, jnp.float64), np.zeros(2), 0.5)
    assert s.q.dtype == s.v.dtype == s.t.dtype == jnp.float32
    s = State.initial(cart, [0, 1], jnp.array([1, 2], jnp.int32))  # integers are cast
    assert s.q.dtype == jnp.float64 and s.v.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="q has dtype float16.*use float32 or float64"):
        State.initial(m32, jnp.zeros(2, jnp.float16))
    with pytest.raises(ValueError, match="v must be real, got dtype complex"):
        State.initial(m32, None, jnp.zeros(2, jnp.complex64))
    with pytest.raises(ValueError, match="q must be a numeric array"):
        State.initial(m32, ["a", "b"])
    with pytest.raises(ValueError, match="t must be a scalar"):
        State.initial(m32, None, None, jnp.zeros(3))
    # a float16 State handed to a float32 model's rollout is refused, not run in float16
    half = State(jnp.zeros(2, jnp.float16), jnp.zeros(2, jnp.float16), jnp.zeros((), jnp.float16))
    with pytest.raises(ValueError, match="float16"):
        rollout(m32, half, None, 1e-3, 2)
    # a float64 state runs in the float32 model's dtype
    traj = rollout(m32, State(jnp.zeros(2), jnp.zeros(2), jnp.zeros(())), None, 1e-3, 2)
    assert traj.states.q.dtype == traj.states.t.dtype == jnp.float32


@pytest.mark.fast
def test_rollout_time_is_step_count_times_dt(cart):
    m32 = cart.astype(jnp.float32)
    t = jax.jit(lambda s: rollout(m32, s, None, 1e-3, 100_000, checks="off").states.t)(State.initial(m32))
    assert t.dtype == jnp.float32
    assert float(t[-1]) == 100.0
    assert float(t[999]) == np.float32(1.0) and float(t[0]) == np.float32(1e-3)
    # from a non-zero start, with a traced dt (t0 + k·dt, the product rounded once)
    t = jax.jit(lambda dt: rollout(m32, State.initial(m32, None, None, 2.0), None, dt, 1000).states.t)(
        jnp.float32(0.01))
    assert float(t[-1]) == float(np.float32(2.0) + np.float32(np.float64(1000) * np.float64(np.float32(0.01))))


@pytest.mark.fast
def test_model_parameters_that_overflow_the_dtype_raise_naming_the_field():
    b = sd.ModelBuilder()
    b.add_body("base", None, sd.JointSpec.revolute((0, 0, 1)), mass=1e39)
    m64 = b.build(jnp.float64)
    with pytest.raises(ValueError, match=r"model parameter mass = 1e\+39 overflows float32"):
        m64.astype(jnp.float32)
    with pytest.raises(ValueError, match="model parameter mass of body 'base' overflows float32"):
        b.build(jnp.float32)
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got float16"):
        m64.astype(jnp.float16)
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got complex64"):
        m64.astype(jnp.complex64)
    # infinite joint limits (unlimited) are not an overflow
    m = sd.models.cart_pole().astype(jnp.float32)
    assert m.mass.dtype == jnp.float32


def test_cli_info_refuses_an_overflowing_mass(tmp_path):
    import subprocess
    import sys

    urdf = tmp_path / "heavy.urdf"
    urdf.write_text("""<robot name="heavy">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1e39"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>""")
    run = subprocess.run([sys.executable, "-m", "sodyn", "info", str(urdf)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0, run.stdout
    assert "inf kg" not in run.stdout
    assert "overflows" in run.stderr, run.stderr
