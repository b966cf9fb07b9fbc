"""Monte Carlo (``sodyn.monte_carlo``): parameter distributions, state samplers, batched runs.

The rollout is :func:`sodyn.simulate.rollout` (``monte_carlo`` also takes another through
``simulate=``).
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import types
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from robots import robot_path

import sodyn as sd

# the module (not a re-exported function of the same name)
mc = importlib.import_module("sodyn.simulate.monte_carlo")

rollout = sd.simulate.rollout


def pd_policy(params, t, state):
    return -params["kp"] * state.q - params["kd"] * state.v


class Ground(eqx.Module):
    """A contact-model-like pytree (the real GroundContact is the contact helper's)."""

    stiffness: jax.Array
    friction: jax.Array
    kind: str = eqx.field(static=True, default="plane")


def _limited_floating_model():
    """A free base with a limited hinge leg, a spherical joint and a foot frame below the base."""
    b = sd.ModelBuilder(name="limited")
    b.add_body("base", None, sd.JointSpec.free(), mass=2.0, inertia=np.diag([0.02, 0.03, 0.04]))
    b.add_body("thigh", "base", sd.JointSpec.revolute((0, 1, 0)), translation=(0, 0, -0.1), mass=0.5,
               com=(0, 0, -0.1), lower=-0.2, upper=0.3)
    b.add_body("shin", "thigh", sd.JointSpec.revolute((0, 1, 0)), translation=(0, 0, -0.2), mass=0.3,
               com=(0, 0, -0.1), lower=0.0, upper=0.1)
    b.add_body("ball", "base", sd.JointSpec.spherical(), translation=(0.1, 0, 0), mass=0.2)
    b.add_frame("foot", "shin", translation=(0, 0, -0.2))
    return b.build()


# ---------------------------------------------------------------------------
# Monte Carlo equals a loop over its samples
# ---------------------------------------------------------------------------


def test_monte_carlo_over_1024_samples_equals_a_python_loop_over_8_of_them():
    """1024 samples (randomized model, policy gains and initial states) in 4 chunks, the last one
    padded; 8 of them, the padded chunk's included, recomputed one by one from their keys with
    a direct rollout call agree to round-off."""
    model = sd.models.pendulum_chain(3, damping=0.05)
    dt, steps, batch = 0.01, 12, 1024
    dist = mc.ParameterDistribution({
        ("model.mass", "model.inertia"): mc.uniform_scale(0.8, 1.2),
        "model.damping": mc.uniform(0.0, 0.1),
        "params.kp": mc.log_uniform_scale(0.5, 2.0),
    })
    sampler = mc.home_sampler(noise=0.4, velocity_noise=0.2)
    params = {"kp": jnp.full(3, 5.0), "kd": jnp.full(3, 0.5)}
    key = jax.random.PRNGKey(7)
    res = mc.monte_carlo(model, dist, sampler, pd_policy, dt, steps, batch, key, chunk=300, progress=False,
                         keep="trajectories", params=params)
    assert res.batch == batch and res.finite.all()
    assert res.trajectories.states.q.shape == (batch, steps, 3)
    assert set(res.params) == {"model.mass", "model.inertia", "model.damping", "params.kp"}  # kd is not varied

    param_keys, state_keys = mc.sample_keys(key, batch)
    np.testing.assert_array_equal(res.param_keys, param_keys)
    direct = jax.jit(lambda m, s, p: rollout(m, s, pd_policy, dt, steps, params=p))
    for i in (0, 1, 299, 300, 511, 900, 1000, 1023):
        sample = dist(param_keys[i], {"model": model, "params": params})
        state = sampler(state_keys[i], sample["model"])
        ro = direct(sample["model"], state, sample["params"])
        np.testing.assert_allclose(res.params["model.mass"][i], sample["model"].mass, rtol=1e-15)
        np.testing.assert_allclose(res.params["params.kp"][i], sample["params"]["kp"], rtol=1e-15)
        np.testing.assert_allclose(res.initial.q[i], state.q, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(res.trajectories.states.q[i], ro.states.q, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(res.trajectories.states.v[i], ro.states.v, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(res.trajectories.tau[i], ro.tau, rtol=1e-11, atol=1e-12)
    # the statistics are those of the kept samples
    final_q = res.trajectories.states.q[:, -1]
    st = res.stats["final_q"]
    assert st.count == batch
    np.testing.assert_allclose(st.mean, final_q.mean(0), rtol=1e-12)
    np.testing.assert_allclose(st.std, final_q.std(0), rtol=1e-9)
    np.testing.assert_allclose(st.min, final_q.min(0))
    np.testing.assert_allclose(st.max, final_q.max(0))
    assert res.stats["energy"].mean.shape == (steps,)


def test_keep_modes_user_summary_and_floating_base():
    """``keep="summary"`` returns no states; ``"final"`` the last state; a user summary with or
    without the model argument; a floating base gets ``base_height`` and starts above ground."""
    model = sd.models.humanoid_like()
    key = jax.random.key(3)  # a typed key works as a raw one does
    res = mc.monte_carlo(model, {"model.damping": mc.uniform(0.0, 1.0)}, mc.home_sampler(noise=0.1), None,
                         0.002, 4, 6, key, progress=False, keep="final")
    assert res.final.q.shape == (6, model.nq) and res.trajectories is None
    assert res.stats["base_height"].mean.shape == (4,)
    assert np.all(res.initial.q[:, 2] > 0.5) and res.finite.all()
    np.testing.assert_allclose(res.values["finite"], 1.0)
    assert 0.0 < res.compile_seconds < res.seconds  # the call compiles its program, then runs it

    chain = sd.models.pendulum_chain(2)
    one_arg = mc.monte_carlo(chain, None, None, None, 0.01, 3, 5, jax.random.PRNGKey(0), progress=False,
                             summary=lambda ro: {"tip": ro.states.q[-1, 1], "finite": jnp.isfinite(ro.states.q).all()},
                             simulate=rollout)
    assert one_arg.final is None and one_arg.trajectories is None and one_arg.params == {}
    assert set(one_arg.stats) == {"tip", "finite"} and one_arg.values["tip"].shape == (5,)
    with_model = mc.monte_carlo(chain, None, None, None, 0.01, 3, 5, jax.random.PRNGKey(0), progress=False,
                                summary=lambda ro, m: {"m": m.mass.sum() + 0 * ro.states.q[-1, 0]},
                                simulate=rollout)
    np.testing.assert_allclose(with_model.values["m"], 2.0)


def test_samples_that_diverge_are_left_out_of_the_statistics():
    model = sd.models.pendulum_chain(2)

    def blow_up(key, nominal):  # sample 0's damping is NaN: its rollout is not finite
        bad = jax.random.uniform(key) < 0.5
        return eqx.tree_at(lambda t: t["model"].damping, nominal,
                           jnp.where(bad, jnp.nan, nominal["model"].damping))

    res = mc.monte_carlo(model, blow_up, None, None, 0.01, 3, 16, jax.random.PRNGKey(1), progress=False)
    n_bad = int(np.sum(~res.finite))
    assert 0 < n_bad < 16 and res.stats["energy"].count == 16 - n_bad
    assert np.all(np.isfinite(res.stats["energy"].mean))


# ---------------------------------------------------------------------------
# progress bar
# ---------------------------------------------------------------------------


def _fake_tqdm(calls):
    class Bar:
        def __init__(self, total, **kwargs):
            calls.append(("new", total))

        def update(self, n):
            calls.append(("update", n))

        def close(self):
            calls.append(("close",))

    return types.SimpleNamespace(tqdm=Bar)


def test_progress_bar_for_chunked_runs_and_none_with_progress_false(monkeypatch, capsys):
    model = sd.models.pendulum_chain(2)
    run = lambda **kw: mc.monte_carlo(model, None, None, None, 0.01, 2, 10, jax.random.PRNGKey(0),  # noqa: E731
                                      chunk=4, **{"simulate": rollout, **kw})
    calls: list = []
    monkeypatch.setitem(sys.modules, "tqdm", _fake_tqdm(calls))
    traces = []

    def counted(*args, **kwargs):
        traces.append(1)
        return rollout(*args, **kwargs)

    run(simulate=counted)
    assert calls == [("new", 10), ("update", 4), ("update", 4), ("update", 2), ("close",)]
    # one compilation for the three chunks (the rollout is traced as often as for one chunk)
    n_traces = len(traces)
    mc.monte_carlo(model, None, None, None, 0.01, 2, 4, jax.random.PRNGKey(0), chunk=4, progress=False,
                   simulate=counted)
    assert len(traces) == 2 * n_traces
    calls.clear()
    run(progress=False)
    assert calls == []
    # without tqdm: a progress line on stderr
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    capsys.readouterr()
    run()
    err = capsys.readouterr().err
    assert "monte_carlo: 10/10 samples" in err and "samples/s" in err
    # compilation is a phase of its own, before the bar (whose rate and estimate count run time only)
    assert err.index("monte_carlo: compiling ...") < err.index("monte_carlo: compiled in") < err.index("0/10")
    run(progress=False)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------
# a store of finished chunks, resume, the summary table
# ---------------------------------------------------------------------------


def test_a_store_keeps_each_chunk_and_resume_runs_only_the_rest_bit_for_bit(tmp_path, monkeypatch):
    from sodyn.simulate.store import ChunkStore, StoreMismatchError

    model = sd.models.cart_pole()

    def run(store, model=model, steps=8, **kw):
        return mc.monte_carlo(model, {"model.mass": mc.uniform_scale(0.8, 1.2)}, mc.home_sampler(noise=0.3), None,
                              0.01, steps, 7, jax.random.PRNGKey(3), chunk=2, keep="final", progress=False,
                              store=store, **kw)

    full = run(tmp_path / "full")  # uninterrupted: 4 chunks, each written as it finishes
    chunks = [f"chunk_{c:05d}.npz" for c in range(4)]
    assert sorted(os.listdir(tmp_path / "full")) == [*chunks, "manifest.json"]
    # an interrupted run: only the first two chunks reached the disk
    (tmp_path / "cut").mkdir()
    for name in ("manifest.json", *chunks[:2]):
        shutil.copy(tmp_path / "full" / name, tmp_path / "cut" / name)
    saved = []
    save = ChunkStore.save
    monkeypatch.setattr(ChunkStore, "save", lambda self, c, leaves: saved.append(c) or save(self, c, leaves))
    resumed = run(tmp_path / "cut", resume=True)
    assert saved == [2, 3]  # only the missing chunks ran
    for name in ("finite", "param_keys", "state_keys"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(full, name))
    for part in ("values", "params", "initial", "final"):
        want, got = getattr(full, part), getattr(resumed, part)
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(a, b, err_msg=part)
    assert full.stats.keys() == resumed.stats.keys()
    for name, st in full.stats.items():
        for field in ("mean", "std", "min", "max", "count"):
            np.testing.assert_array_equal(getattr(resumed.stats[name], field), getattr(st, field), err_msg=name)

    # a store that holds another run: refused, naming what differs; nothing is overwritten
    with pytest.raises(StoreMismatchError, match="steps: the store has 8, this call 9"):
        run(tmp_path / "cut", steps=9, resume=True)
    heavier = eqx.tree_at(lambda m: m.mass, model, model.mass * 2)
    with pytest.raises(StoreMismatchError, match="parameters: the store has"):
        run(tmp_path / "cut", model=heavier, resume=True)
    with pytest.raises(FileExistsError, match="resume=True"):
        run(tmp_path / "cut")
    assert saved == [2, 3]


@pytest.mark.fast
def test_the_result_prints_a_summary_table():
    stats = {"energy": mc.Stats(np.array([1.0, 3.0]), np.array([0.5, 0.25]), np.array([0.0, 2.0]),
                                np.array([2.0, 4.0]), 3),
             "drift": mc.Stats(np.array(0.125), np.array(0.5), np.array(-1.0), np.array(7.0), 3)}
    result = mc.MonteCarloResult(batch=4, stats=stats, values={}, finite=np.array([True, True, True, False]),
                                 params={}, initial=None, final=None, trajectories=None, param_keys=np.zeros((4, 2)),
                                 state_keys=np.zeros((4, 2)), seconds=2.0, compile_seconds=1.5)
    lines = repr(result).splitlines()
    assert lines[0].startswith("MonteCarloResult: 4 samples, 3 finite")
    assert lines[1].split() == ["quantity", "mean", "std", "min", "max", "finite"]
    assert lines[2].split() == ["energy", "(2,)", "2", "0.5", "0", "4", "3"]  # over the elements
    assert lines[3].split() == ["drift", "0.125", "0.5", "-1", "7", "3"]
    assert result.summary() == repr(result)


class _Device:
    def __init__(self, stats):
        self.stats = stats

    def memory_stats(self):
        return self.stats


def test_accelerator_chunks_fill_a_quarter_of_the_device_memory(monkeypatch):
    """On an accelerator the default chunk holds as many samples as a quarter of the device's
    memory does at the rollout's per-sample working set (1024 without a memory figure); the
    samples' results are the CPU default's."""
    from sodyn.runtime.tuning import MONTE_CARLO_CPU_CHUNK

    assert mc.accelerator_chunk(_Device({"bytes_limit": 4 * 10**9}), 10**5) == 10**4
    assert mc.accelerator_chunk(_Device({"bytes_limit": 4 * 10**3}), 10**5) == 1
    assert mc.accelerator_chunk(_Device(None), 10**5) == MONTE_CARLO_CPU_CHUNK
    model = sd.models.pendulum_chain(2)
    run = lambda: mc.monte_carlo(model, {"model.mass": mc.uniform_scale(0.8, 1.2)}, None, None, 0.01, 3, 10,  # noqa: E731
                                 jax.random.PRNGKey(0), progress=False, keep="final", devices=None)
    cpu = run()
    sizes = []
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(mc, "accelerator_chunk", lambda device, per_sample: sizes.append(per_sample) or 4)
    gpu = run()
    assert len(sizes) == 1 and sizes[0] > 0
    np.testing.assert_allclose(gpu.final.q, cpu.final.q, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gpu.params["model.mass"], cpu.params["model.mass"])


# ---------------------------------------------------------------------------
# samplers
# ---------------------------------------------------------------------------


def _lowest_points(model, q):
    on_body = np.asarray(model.frame_body) >= 0

    def lowest(q):
        fk = sd.forward_kinematics(model, q)
        return jnp.minimum(jnp.min(fk.body.translation[:, 2]), jnp.min(fk.frame.translation[on_body, 2]))

    return jax.jit(jax.vmap(lowest))(q)


def _check_home_states(model, states, clearance=None):
    q = np.asarray(states.q)
    topo = model.topology
    for k, jt in enumerate(model.joint_types):
        s = int(topo.q_start[k])
        if jt in ("spherical", "free"):
            quat = q[:, s + 3:s + 7] if jt == "free" else q[:, s:s + 4]
            np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1.0, atol=1e-12)
        elif jt in ("revolute", "prismatic", "continuous", "helical"):
            assert np.all(q[:, s] >= model.lower_limit[s] - 1e-12) and np.all(q[:, s] <= model.upper_limit[s] + 1e-12)
    if clearance is not None:
        np.testing.assert_allclose(_lowest_points(model, q), clearance, atol=1e-9)


def test_home_state_on_the_manifold_within_limits_and_above_ground():
    keys = jax.random.split(jax.random.PRNGKey(4), 16)
    model = _limited_floating_model()
    home_noisy = lambda k: mc.home_state(model, k, noise=1.0, orientation_noise=0.3, clearance=0.05)  # noqa: E731
    states = jax.jit(jax.vmap(home_noisy))(keys)
    _check_home_states(model, states, clearance=0.05)
    lim = model.joint_q_slice("shin")
    assert np.any(states.q[:, lim] == 0.0) and np.any(states.q[:, lim] == 0.1)  # clipped at both limits
    assert np.all(states.v == 0.0) and np.all(states.t == 0.0)
    assert np.std(states.q[:, 3]) > 0  # the base orientation is perturbed

    # base_height puts the base there; velocity noise; contact points below the foot count
    home = jax.jit(mc.home_state, static_argnames=("noise", "orientation_noise", "velocity_noise",
                                                    "base_height", "clearance"))
    s = home(model, keys[0], base_height=1.5, velocity_noise=0.1)
    assert float(s.q[2]) == 1.5 and float(jnp.abs(s.v).max()) > 0
    foot = (np.array([model.body_id("shin")]), np.array([[0.0, 0.0, -0.3]]))
    lifted = jax.jit(lambda k: mc.home_state(model, k, noise=0.0, orientation_noise=0.0, clearance=0.0,
                                             points=foot))(keys[0])
    plain = home(model, keys[0], noise=0.0, orientation_noise=0.0, clearance=0.0)
    np.testing.assert_allclose(lifted.q[2] - plain.q[2], 0.1, atol=1e-12)

    # humanoid: no limits, many hinges; noise zero gives the neutral pose lifted
    humanoid = sd.models.humanoid_like()
    hs = jax.jit(jax.vmap(lambda k: mc.home_state(humanoid, k, noise=0.2)))(keys[:4])
    _check_home_states(humanoid, hs, clearance=0.02)
    q0 = home(humanoid, keys[0], noise=0.0, orientation_noise=0.0).q
    np.testing.assert_allclose(q0[3:], humanoid.q_neutral[3:])

    # fixed base: perturbed, not lifted
    chain = sd.models.pendulum_chain(3)
    cs = jax.jit(jax.vmap(lambda k: mc.home_state(chain, k, noise=0.1)))(keys)
    assert 0.05 < float(np.std(cs.q)) < 0.2


def test_home_state_on_solo12_and_keyframes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solo = sd.load_urdf(robot_path("solo12"), floating_base=True)
    keys = jax.random.split(jax.random.PRNGKey(5), 8)
    states = jax.jit(jax.vmap(lambda k: mc.home_state(solo, k, noise=0.3, clearance=0.01)))(keys)
    _check_home_states(solo, states, clearance=0.01)

    # from a given posture (standing, knees bent): joints kept, the base lifted onto the feet
    stand = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
    posture = np.concatenate([[0.3, -0.2, 1.0, 1.0, 0.0, 0.0, 0.0], stand])
    standing = mc.home_state(solo, keys[0], q=posture, noise=0.0, orientation_noise=0.0, clearance=0.005)
    np.testing.assert_allclose(standing.q[7:], stand, atol=1e-12)
    np.testing.assert_allclose(standing.q[:2], posture[:2], atol=1e-12)
    _check_home_states(solo, jax.tree_util.tree_map(lambda x: x[None], standing), clearance=0.005)
    assert 0.15 < float(standing.q[2]) < 0.3  # the bent legs, not the straight neutral ones (≈ 0.34 m)
    sampler = mc.home_sampler(q=posture, noise=0.05, clearance=0.005)
    noisy = jax.jit(jax.vmap(lambda k: sampler(k, solo)))(keys)
    _check_home_states(solo, noisy, clearance=0.005)
    assert 0.02 < float(np.std(noisy.q[:, 7:] - stand)) < 0.1
    # a GroundContact's spheres: their bottoms, not their centres, start `clearance` above the ground
    feet = sd.GroundContact.at_frames(solo, [f"{leg}_FOOT" for leg in ("FL", "FR", "HL", "HR")], radius=0.0175)
    on_feet = mc.home_state(solo, keys[0], q=posture, noise=0.0, orientation_noise=0.0, clearance=0.005,
                            points=feet)
    gap = -sd.simulate.contact_terms(solo, feet, on_feet.q, jnp.zeros(solo.nv)).penetration
    np.testing.assert_allclose(np.min(gap), 0.005, atol=1e-9)
    with pytest.raises(ValueError, match="not both"):
        mc.home_state(solo, keys[0], q=posture, keyframe="bent")
    with pytest.raises(ValueError, match=r"q must have shape \(19,\)"):
        mc.home_state(solo, keys[0], q=stand)

    b = sd.ModelBuilder()
    b.add_body("a", None, sd.JointSpec.revolute((0, 1, 0)), mass=1.0)
    b.add_keyframe("bent", [0.7], [0.0])
    m = b.build()
    np.testing.assert_allclose(mc.home_state(m, keys[0], noise=0.0, keyframe="bent").q, [0.7])
    with pytest.raises(ValueError, match="unknown keyframe"):
        mc.home_state(m, keys[0], keyframe="straight")


# ---------------------------------------------------------------------------
# parameter distributions
# ---------------------------------------------------------------------------


def test_parameter_samples_have_the_nominal_shapes_and_physical_inertias():
    model = sd.models.humanoid_like()
    dist = mc.ParameterDistribution({("mass", "inertia"): mc.log_uniform_scale(0.3, 3.0)},
                                    damping=mc.normal_noise(0.1, low=0.0), armature=mc.uniform_scale(1.0, 2.0))
    samples = jax.vmap(lambda k: dist(k, model))(jax.random.split(jax.random.PRNGKey(0), 32))
    assert samples.mass.shape == (32, model.n_bodies) and samples.inertia.shape == (32, model.n_bodies, 3, 3)
    ratio = samples.mass / model.mass
    np.testing.assert_allclose(samples.inertia, ratio[..., None, None] * model.inertia, rtol=1e-14)
    assert 0.3 <= ratio.min() and ratio.max() <= 3.0 and np.std(np.log(ratio)) > 0.3
    eig = np.linalg.eigvalsh(np.asarray(samples.inertia))
    assert np.all(eig > 0) and np.all(eig[..., 0] + eig[..., 1] >= eig[..., 2] * (1 - 1e-12))
    np.testing.assert_array_equal(samples.com, np.broadcast_to(model.com, samples.com.shape))  # untouched
    assert np.all(samples.damping >= 0.0)
    # an entry's draw does not depend on the other entries
    alone = mc.randomize(model, jax.random.PRNGKey(0), {("mass", "inertia"): mc.log_uniform_scale(0.3, 3.0)})
    first = dist(jax.random.PRNGKey(0), model)
    np.testing.assert_array_equal(alone.mass, first.mass)

    # other pytrees: a contact model and a dict holding both
    ground = Ground(stiffness=jnp.array(1e4), friction=jnp.array([0.8, 0.8]))
    g = mc.randomize(ground, jax.random.PRNGKey(1), stiffness=mc.uniform_scale(0.5, 1.5, shared=True),
                     friction=mc.uniform(0.2, 1.2))
    assert g.stiffness.shape == () and 5e3 <= g.stiffness <= 1.5e4 and g.kind == "plane"
    assert np.all((g.friction >= 0.2) & (g.friction <= 1.2))
    both = mc.randomize({"model": model, "contact": ground}, jax.random.PRNGKey(2),
                        {"contact.stiffness": mc.normal_noise(10.0), "model.gravity": mc.normal_noise(0.01)})
    assert both["contact"].stiffness != 1e4 and both["model"].gravity.shape == (3,)


def test_parameter_distribution_errors_name_the_parameter():
    model = sd.models.pendulum_chain(3)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match=r"parameter 'mass'.*shape \(2,\).*shape \(3,\)"):
        mc.randomize(model, key, mass=lambda k, x: x[:2])
    with pytest.raises(ValueError, match="has no field 'masss'"):
        mc.randomize(model, key, masss=mc.uniform_scale(0.9, 1.1))
    with pytest.raises(ValueError, match="has no key 'contact'"):
        mc.randomize({"model": model}, key, {"contact.stiffness": mc.uniform_scale(0.9, 1.1)})
    with pytest.raises(ValueError, match="only array fields"):
        mc.randomize(model, key, name=mc.uniform_scale(0.9, 1.1))
    with pytest.raises(ValueError, match="0 < low <= high"):
        mc.uniform_scale(-1.0, 1.0)
    with pytest.raises(ValueError, match="fewest axes first"):
        mc.randomize(model, key, {("inertia", "mass"): mc.uniform_scale(0.9, 1.1)})
    with pytest.raises(TypeError, match="sampler must be callable"):
        mc.ParameterDistribution(mass=1.0)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def test_monte_carlo_rejects_bad_arguments():
    model = sd.models.pendulum_chain(2)
    key = jax.random.PRNGKey(0)

    def run(*, sample_params=None, sample_state=None, controls=None, steps=2, batch=4, **kw):
        return mc.monte_carlo(model, sample_params, sample_state, controls, 0.01, steps, batch, key,
                              progress=False, simulate=rollout, **kw)

    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="batch must be a positive integer"):
            run(batch=bad)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        run(steps=0)
    with pytest.raises(ValueError, match="chunk must be a positive integer"):
        run(chunk=0)
    with pytest.raises(ValueError, match="keep must be one of"):
        run(keep="all")
    with pytest.raises(ValueError, match=r"sample_params: parameter 'model.mass' has shape \(3,\).*\(2,\)"):
        run(sample_params=lambda k, n: {"model": eqx.tree_at(lambda m: m.mass, n["model"], jnp.ones(3))})
    with pytest.raises(ValueError, match="sample_params must return a pytree of the nominal's structure"):
        run(sample_params=lambda k, n: n["model"])
    with pytest.raises(ValueError, match=r"sample_state must return a State with q of shape \(2,\)"):
        run(sample_state=lambda k, m: sd.simulate.State(q=jnp.zeros(3), v=jnp.zeros(2), t=jnp.zeros(())))
    with pytest.raises(TypeError, match="sample_state must be callable"):
        run(sample_state=3)
    with pytest.raises(ValueError, match="policy_or_controls has 5 rows for steps=2"):
        run(controls=np.zeros((5, 2)))
    with pytest.raises(TypeError, match="unknown option"):
        mc.home_sampler(nosie=0.1)


# ---------------------------------------------------------------------------
# several devices
# ---------------------------------------------------------------------------

_MULTI_DEVICE_SCRIPT = r"""
import jax
import sodyn as sd
sd.use_cpu_cores(2)
jax.config.update("jax_enable_x64", True)
import numpy as np
import sys
sys.path.insert(0, "tests")
import test_monte_carlo as t
mc = t.mc

split = []
original = mc.sd_batch
def spy(*args, **kwargs):
    b = original(*args, **kwargs)
    def call(*a):
        split.append(len(b.split_devices(*a)))
        return b(*a)
    call.chunk_size = b.chunk_size
    return call
mc.sd_batch = spy
model = sd.models.pendulum_chain(3)
dist = {("model.mass", "model.inertia"): mc.uniform_scale(0.8, 1.2)}
run = lambda devices: mc.monte_carlo(model, dist, mc.home_sampler(noise=0.3), None, 0.01, 5, 100,
                                     jax.random.PRNGKey(0), chunk=64, progress=False, keep="final",
                                     devices=devices, simulate=t.rollout)
two, one = run("auto"), run(None)
assert split == [2, 0], split  # traced once per run (one compilation for both chunks)
np.testing.assert_allclose(two.final.q, one.final.q, rtol=1e-12, atol=1e-13)
np.testing.assert_allclose(two.stats["energy"].mean, one.stats["energy"].mean, rtol=1e-12)
print("OK")
"""


def test_monte_carlo_splits_chunks_across_cpu_devices():
    """With two CPU devices each chunk is split across both (``sodyn.batch``); results are unchanged."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", _MULTI_DEVICE_SCRIPT], capture_output=True, text=True, env=env,
                         cwd=here, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("OK")
