"""Fluid forces (sodyn.simulate.fluid) against MuJoCo's ``qfrc_fluid``: the inertia-box and
ellipsoid models on models written here and on MJCF files shipped in installed packages;
gradients; a body falling to its terminal velocity."""

import importlib.util
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.io import tau_to_mujoco, v_from_mujoco
from sodyn.simulate.fluid import Fluid, fluid_forces, fluid_from_mujoco, fluid_wrenches

mujoco = pytest.importorskip("mujoco")

# free body with a full inertia, a chain of hinge / slide / ball joints with rotated inertial
# frames and joint anchors off the body origin, a body with two joints; density, viscosity, wind
BOX_XML = """<mujoco><option density="800" viscosity="0.3" wind="0.7 -0.4 0.2"/>
<worldbody>
 <body name="free" pos="0 0 1">
  <freejoint/>
  <inertial pos="0.1 -0.05 0.02" mass="2" fullinertia="0.3 0.2 0.15 0.02 -0.01 0.03"/>
  <body name="b1" pos="0.2 0 0" euler="10 20 30">
   <joint name="h1" type="hinge" axis="0 1 0.3" pos="0.05 0 0"/>
   <inertial pos="0.1 0.02 0" quat="0.9 0.1 0.3 -0.2" mass="0.7" diaginertia="0.01 0.02 0.025"/>
   <body name="b2" pos="0.3 0 0">
    <joint name="h2" type="hinge" axis="1 0 0"/>
    <inertial pos="0.0 0.1 0.05" mass="0.5" fullinertia="0.004 0.005 0.006 0.001 0.0005 -0.0008"/>
    <body name="b3" pos="0 0.2 0">
     <joint name="s3" type="slide" axis="0 0 1"/>
     <inertial pos="0.02 0 0" mass="0.3" diaginertia="0.001 0.002 0.0025"/>
     <body name="b4" pos="0 0 0.1">
      <joint name="ball" type="ball" pos="0 0.02 0"/>
      <inertial pos="0.03 0.01 0.0" mass="0.4" diaginertia="0.002 0.003 0.004" quat="1 0.2 0 0.1"/>
     </body>
    </body>
   </body>
  </body>
 </body>
 <body name="arm" pos="1 0 0">
  <joint name="a1" type="hinge" axis="0 0 1"/>
  <joint name="a2" type="hinge" axis="0 1 0" pos="0.01 0 0"/>
  <inertial pos="0.2 0 0" mass="1" diaginertia="0.01 0.03 0.035"/>
 </body>
</worldbody></mujoco>"""

# ellipsoid model: geoms of every primitive type, fluid coefficients, a jointless body merged
# into its parent, a geom that does not collide, and an inertia-box body below them
ELLIPSOID_XML = """<mujoco><option density="1.2" viscosity="0.02" wind="2 1 -0.5"/>
<worldbody>
 <body name="torso" pos="0 0 1" euler="5 10 15">
  <freejoint/>
  <geom type="box" size="0.2 0.1 0.05" fluidshape="ellipsoid" fluidcoef="0.5 0.25 1.5 1.0 1.0"/>
  <geom type="capsule" fromto="0 0 0 0.3 0.1 0.2" size="0.03" fluidshape="ellipsoid"/>
  <geom type="sphere" size="0.05" pos="0 0.2 0" contype="0" conaffinity="0"/>
  <body name="welded" pos="0.1 0.2 0" euler="30 0 0">
   <geom type="cylinder" size="0.04 0.1" fluidshape="ellipsoid"/>
   <geom type="ellipsoid" size="0.04 0.08 0.1" pos="0.05 0 0" euler="0 40 0" fluidshape="ellipsoid"/>
  </body>
  <body name="leg" pos="0 -0.2 0">
   <joint name="l1" type="hinge" axis="1 0 0" pos="0 0.02 0"/>
   <joint name="l2" type="hinge" axis="0 1 0" pos="0.01 0 0"/>
   <geom type="capsule" fromto="0 0 0 0 -0.3 -0.1" size="0.04" fluidshape="ellipsoid"
         fluidcoef="0.4 0.3 1.2 0.8 0.5"/>
   <body name="foot" pos="0 -0.3 -0.1">
    <joint name="f1" type="hinge" axis="0 0 1"/>
    <geom type="box" size="0.05 0.1 0.02" euler="10 0 20"/>
    <geom type="ellipsoid" size="0.025 0.01 0.0001" pos="0.1 0 0" fluidshape="ellipsoid" mass="1e-3"/>
   </body>
  </body>
  <body name="tail" pos="-0.2 0 0" euler="0 20 0">
   <joint name="t1" type="hinge" axis="0 1 0"/>
   <geom type="box" size="0.1 0.02 0.03" pos="-0.1 0 0" euler="0 0 15"/>
  </body>
 </body>
</worldbody></mujoco>"""


def _load(source):
    with warnings.catch_warnings():  # fluid forces and other elements the loader does not model
        warnings.simplefilter("ignore")
        model = sd.load_mjcf(source)
    if isinstance(source, str):
        return mujoco.MjModel.from_xml_string(source), model
    return mujoco.MjModel.from_xml_path(str(source)), model


_forces = jax.jit(fluid_forces)


def _max_error(mj, model, fluids, n_states=10, seed=0, speed=2.0):
    """Largest |sodyn − MuJoCo| over random states, relative to 1 + max |qfrc_fluid|."""
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n_states):
        mujoco.mj_resetData(mj, d)
        mujoco.mj_integratePos(mj, d.qpos, rng.normal(size=mj.nv), 1.0)
        d.qvel[:] = speed * rng.normal(size=mj.nv)
        mujoco.mj_forward(mj, d)
        q = jnp.asarray(d.qpos)
        v = v_from_mujoco(model, q, d.qvel)
        assert np.abs(d.qfrc_fluid).max() > 0
        for fluid in fluids:
            tau = np.asarray(tau_to_mujoco(model, q, _forces(model, fluid, q, v)))
            worst = max(worst, np.abs(tau - d.qfrc_fluid).max() / (1.0 + np.abs(d.qfrc_fluid).max()))
    return worst


@pytest.mark.fast
def test_inertia_box_matches_mujoco():
    mj, model = _load(BOX_XML)
    from_mj, notes = fluid_from_mujoco(mj, model)
    assert notes == [] and not from_mj.ellipsoid_body and len(from_mj.box_body) == 6
    from_model = Fluid.from_model(model, 800.0, 0.3, (0.7, -0.4, 0.2))
    assert _max_error(mj, model, [from_mj, from_model]) < 1e-9


def test_ellipsoid_model_matches_mujoco():
    mj, model = _load(ELLIPSOID_XML)
    fluid, notes = fluid_from_mujoco(mj, model)
    assert notes == []
    assert len(fluid.ellipsoid_body) == 6 and fluid.box_body == (4,)
    assert _max_error(mj, model, [fluid]) < 1e-9
    assert _max_error(mj, model, [fluid], n_states=3, seed=1, speed=1e-6) < 1e-9  # slow: Stokes regime


def test_fluid_off_and_wind_only():
    mj, model = _load(BOX_XML.replace('density="800" viscosity="0.3"', ""))
    assert fluid_from_mujoco(mj, model) == (None, [])
    mj, model = _load(BOX_XML)
    mj.opt.disableflags = int(mujoco.mjtDisableBit.mjDSBL_SPRING) | int(mujoco.mjtDisableBit.mjDSBL_DAMPER)
    assert fluid_from_mujoco(mj, model) == (None, [])  # MuJoCo then computes no fluid force
    # at rest in a wind the force is the wind's drag
    fluid = Fluid.from_model(model, 800.0, 0.3, (0.7, -0.4, 0.2))
    q = sd.neutral_configuration(model)
    assert np.abs(np.asarray(_forces(model, fluid, q, jnp.zeros(model.nv)))).max() > 1.0


def _packaged_models():
    roots = {}
    for pkg in ("mujoco", "dm_control", "gymnasium"):
        spec = importlib.util.find_spec(pkg)
        if spec is not None and spec.submodule_search_locations:
            roots[pkg] = Path(next(iter(spec.submodule_search_locations)))
    files = [("mujoco", "testdata/model.xml"), ("dm_control", "suite/fish.xml"), ("dm_control", "suite/swimmer.xml"),
             ("gymnasium", "envs/mujoco/assets/swimmer.xml"),
             ("dm_control", "locomotion/walkers/assets/fruitfly_v2/fruitfly.xml")]
    return [pytest.param(roots[p] / f if p in roots else None, id=f"{p}/{f}") for p, f in files]


@pytest.mark.parametrize("path", _packaged_models())
def test_packaged_models_match_mujoco(path):
    if path is None or not path.exists():
        pytest.skip("package not installed")
    mj, model = _load(path)
    assert mj.opt.density > 0 or mj.opt.viscosity > 0
    fluid, notes = fluid_from_mujoco(mj, model)
    assert notes == []
    assert _max_error(mj, model, [fluid], n_states=10 if mj.nv < 50 else 3) < 1e-9


def _replace(fluid: Fluid, **kw) -> Fluid:
    names = list(kw)
    return eqx.tree_at(lambda f: [getattr(f, n) for n in names], fluid, [kw[n] for n in names])


def _random_state(mj, seed):
    """A random (qpos, qvel) of a MuJoCo model, drawn in NumPy."""
    rng = np.random.default_rng(seed)
    qpos = np.array(mj.qpos0)
    mujoco.mj_integratePos(mj, qpos, rng.normal(size=mj.nv), 1.0)
    return jnp.asarray(qpos), jnp.asarray(rng.normal(size=mj.nv))


@pytest.mark.parametrize("xml", [BOX_XML, ELLIPSOID_XML], ids=["box", "ellipsoid"])
def test_gradients_and_batching(xml):
    mj, model = _load(xml)
    fluid, _ = fluid_from_mujoco(mj, model)
    q, v = _random_state(mj, 4)
    h = 1e-6
    steps = h * jnp.concatenate([jnp.eye(model.nv), -jnp.eye(model.nv)])
    densities = jnp.array([0.5, 2.0])

    @jax.jit
    def check(v, fluid):
        total = lambda u, fl: jnp.sum(fluid_forces(model, fl, q, u))
        # gradients at rest and at v; central differences at v
        grads = jax.vmap(jax.grad(total, argnums=(0, 1)), in_axes=(0, None))(jnp.stack([jnp.zeros_like(v), v]), fluid)
        fd = jax.vmap(lambda e: total(v + e, fluid))(steps)
        # one vmap over states and densities together
        batched = jax.vmap(lambda d, u: fluid_forces(model, _replace(fluid, density=d), q, u))(
            densities, jnp.stack([v, 2 * v]))
        single = jnp.stack([fluid_forces(model, _replace(fluid, density=densities[0]), q, v),
                            fluid_forces(model, _replace(fluid, density=densities[1]), q, 2 * v)])
        return grads, (fd[: model.nv] - fd[model.nv:]) / (2 * h), batched, single

    (grad_v, grad_fluid), fd, batched, single = check(v, fluid)
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves((grad_v, grad_fluid)))
    fd = np.asarray(fd)
    np.testing.assert_allclose(np.asarray(grad_v[1]), fd, rtol=1e-6, atol=1e-6 * (1 + np.abs(fd).max()))
    np.testing.assert_allclose(np.asarray(batched), np.asarray(single), rtol=1e-12, atol=1e-14)


def test_wrenches_give_the_generalised_force():
    mj, model = _load(BOX_XML)
    fluid = Fluid.from_model(model, 800.0, 0.3, (0.7, -0.4, 0.2))
    q, v = _random_state(mj, 1)

    @jax.jit
    def both(q, v):
        # inverse dynamics at zero acceleration with and without f_ext differ by −Σ Jᵀ f
        f_ext = fluid_wrenches(model, fluid, q, v)
        a = jnp.zeros(model.nv)
        return f_ext, sd.inverse_dynamics(model, q, v, a) - sd.inverse_dynamics(model, q, v, a, f_ext)

    f_ext, diff = both(q, v)
    assert f_ext.shape == (model.n_bodies, 6)
    np.testing.assert_allclose(np.asarray(diff), np.asarray(_forces(model, fluid, q, v)), rtol=1e-10, atol=1e-10)


def test_falling_cube_reaches_terminal_velocity():
    side, mass, rho, mu, g = 0.1, 1.0, 1000.0, 0.1, 9.81
    xml = f"""<mujoco><option gravity="0 0 -{g}"/><worldbody><body><freejoint/>
      <geom type="box" size="{side / 2} {side / 2} {side / 2}" mass="{mass}"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sd.load_mjcf(xml)
    fluid = Fluid.from_model(model, rho, mu)
    np.testing.assert_allclose(np.asarray(fluid.box_size), side, rtol=1e-12)
    # m g = 3π d μ v + ρ b² v² / 2  with d = b (the cube's inertia box is the cube)
    a, b, c = 0.5 * rho * side**2, 3 * np.pi * side * mu, -mass * g
    v_terminal = (-b + np.sqrt(b * b - 4 * a * c)) / (2 * a)
    dt, steps = 2e-3, 1000

    def body(state, _):
        f_ext = fluid_wrenches(model, fluid, state.q, state.v)
        state = sd.step(model, state, None, dt, integrator="semi_implicit", f_ext=f_ext)
        return state, state.v

    state = sd.State.initial(model)
    _, vs = jax.jit(lambda s: jax.lax.scan(body, s, None, length=steps))(state)
    vz = np.asarray(vs[:, 5])  # body-frame linear velocity; the cube does not rotate
    assert np.abs(np.asarray(vs[:, :5])).max() < 1e-9
    assert vz[10] > -v_terminal  # still accelerating early on
    np.testing.assert_allclose(vz[-1], -v_terminal, rtol=1e-3)
