"""``sodyn.contraction.contract`` against ``jnp.einsum``: values, broadcasting, dtypes, forward
and reverse derivatives (second order too), ``vmap`` over either operand; bad specs; and the
compiled form of sodyn's batched programs under plain ``jax.jit``: no YNNPACK fusion."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sodyn as sd
from sodyn.contraction import contract
from sodyn.models import random_tree

CASES = [
    ("...ij,...jk->...ik", (5, 3, 3), (5, 3, 3)),
    ("...ij,...j->...i", (4, 5, 6, 6), (5, 6)),
    ("...ji,...j->...i", (5, 6, 6), (6,)),
    ("...i,...i->...", (7, 6), (7, 6)),
    ("...,...i->...i", (7,), (7, 6)),
    ("...ij,...ij->...", (2, 3, 4), (2, 3, 4)),
    ("...ij,...kj->...ik", (1, 3, 4), (5, 2, 4)),
    ("...cli,...dli->...cd", (3, 2, 4, 6), (3, 5, 4, 6)),
]


def _operands(sa, sb, dtype=jnp.float64):
    ka, kb = jax.random.split(jax.random.PRNGKey(len(sa) * 7 + len(sb)))
    return jax.random.normal(ka, sa, dtype), jax.random.normal(kb, sb, dtype)


@pytest.fixture(scope="module")
def evaluated():
    """Every case's value, gradients, JVP, Hessian and vmaps, by contract and by einsum, in one
    compiled function per case (compile time dominates)."""
    out = {}
    for spec, sa, sb in CASES:
        a, b = _operands(sa, sb)
        ta, tb = _operands(sa, sb)

        def everything(mul, a, b, ta, tb, spec=spec):
            loss = lambda a, b: jnp.sum(jnp.sin(mul(spec, a, b)))  # noqa: E731
            stack_a, stack_b = jnp.stack([a, 2 * a, -a]), jnp.stack([b, -b, 3 * b])
            return dict(
                value=mul(spec, a, b),
                grads=jax.grad(loss, argnums=(0, 1))(a, b),
                jvp=jax.jvp(loss, (a, b), (ta, tb))[1],
                hessian=jax.hessian(loss)(a, b),
                vmap_both=jax.vmap(lambda x, y: mul(spec, x, y))(stack_a, stack_b),
                vmap_a=jax.vmap(lambda x: mul(spec, x, b))(stack_a),
                vmap_b_last=jax.vmap(lambda y: mul(spec, a, y), in_axes=-1)(jnp.moveaxis(stack_b, 0, -1)),
            )

        out[spec] = tuple(jax.jit(everything, static_argnums=0)(mul, a, b, ta, tb) for mul in (contract, jnp.einsum))
    return out


@pytest.mark.fast
@pytest.mark.parametrize("spec", [c[0] for c in CASES])
def test_matches_einsum_with_derivatives_and_vmap(evaluated, spec):
    ours, ref = evaluated[spec]
    for key in ref:
        for x, y in zip(jax.tree_util.tree_leaves(ours[key]), jax.tree_util.tree_leaves(ref[key])):
            assert x.shape == y.shape, (key, x.shape, y.shape)
            np.testing.assert_allclose(x, y, rtol=1e-11, atol=1e-12, err_msg=key)


@pytest.mark.fast
def test_eager_float32_and_promotion():
    a, b = _operands((4, 3, 3), (3,), jnp.float32)
    out = contract("...ij,...j->...i", a, b)
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, jnp.einsum("...ij,...j->...i", a, b), rtol=1e-6)
    mixed = contract("...ij,...j->...i", a, np.ones(3))  # NumPy float64 promotes as in jnp
    assert mixed.dtype == jnp.result_type(a, np.ones(3))


@pytest.mark.fast
@pytest.mark.parametrize("spec, sa, sb", [
    ("ij,jk->ik", (3, 3), (3, 3)),            # no leading ...
    ("...ij,...jk", (3, 3), (3, 3)),          # no output
    ("...ii,...i->...i", (3, 3), (3,)),       # repeated index
    ("...ij,...k->...i", (3, 3), (3,)),       # j summed over one operand only
    ("...ij,...jk->...ik", (3, 4), (3, 3)),   # sizes of j disagree
    ("...ij,...jk->...ik", (3,), (3, 3)),     # operand of too small a rank
    ("...ij,...jk->...ik", (2, 3, 3), (4, 3, 3)),  # leading axes that do not broadcast
])
def test_bad_specs_are_named(spec, sa, sb):
    with pytest.raises(ValueError, match="contract"):
        contract(spec, np.ones(sa), np.ones(sb))


def _library_reductions(hlo: str) -> list[str]:
    """The YNNPACK fusions of an optimised HLO module that contain a reduction."""
    bodies = dict(re.findall(r"^%?(\S+) \(.*?\n(.*?)\n}", hlo, re.S | re.M))
    called = re.findall(r"kind=kCustom, calls=%?([\w.\-]+),.*__ynn_fusion", hlo)
    return [name for name in called if " reduce(" in bodies.get(name, "")]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU's library fusions")
@pytest.mark.parametrize("dtype", [pytest.param(jnp.float32, marks=pytest.mark.fast), jnp.float64],
                         ids=["float32", "float64"])
def test_batched_programs_under_plain_jit_have_no_library_reductions(dtype):
    """The forward programs users jit themselves compile without YNNPACK reductions (XLA:CPU
    hands large plain-add reductions to them, several times slower than its own loops)."""
    model = random_tree(9, seed=3, floating_base=True)
    batch = 1024
    q = jax.vmap(lambda k: sd.random_configuration(model, k))(jax.random.split(jax.random.PRNGKey(0), batch))
    v = jnp.ones((batch, model.nv))

    def programs(q, v):
        return (sd.forward_dynamics(model, q, v, v), sd.inverse_dynamics(model, q, v, v),
                sd.mass_matrix(model, q), sd.inverse_mass_matrix(model, q))

    text = jax.jit(jax.vmap(programs)).lower(q.astype(dtype), v.astype(dtype)).compile().as_text()
    assert "__ynn_fusion" in text or "reduce(" in text  # the check below reads this module
    assert _library_reductions(text) == []
