"""Every matrix product in sodyn's programs runs at full precision (``sodyn.runtime.precision``).

JAX's default precision lets a GPU compute a float32 ``dot_general`` in TensorFloat-32, which
costs ``M⁻¹`` of a humanoid several digits.  The check runs on any backend: the ``precision``
of every ``dot_general`` in the traced program (sub-programs of scans, conditionals and custom
rules included), of each public function and of its gradient, is ``Precision.HIGHEST``, also
when the caller's default is the lowest.  The functions' own programs are in the ``fast``
subset, their gradients (which take longer to trace) in the main run.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import sodyn as sd
from sodyn.runtime.batching import sub_jaxprs
from sodyn.simulate import GroundContact, RigidContact, State, position_servos
from sodyn.simulate.rigid_contact import contact_jacobian, delassus_matrix

MODEL = sd.models.humanoid_like()
Q = sd.random_configuration(MODEL, jax.random.PRNGKey(0))
V = 0.1 * jax.random.normal(jax.random.PRNGKey(1), (MODEL.nv,))
TAU = 0.2 * jax.random.normal(jax.random.PRNGKey(2), (MODEL.nv,))
HANDS = ["left_arm_3", "right_arm_3"]
GROUND = GroundContact.at_frames(MODEL, ["left_leg_5", "right_leg_5"], radius=0.02)
SERVOS = position_servos(MODEL, MODEL.joint_names[1:], kp=5.0, kv=0.2)
PRESCRIBED = np.arange(MODEL.nv) == 20  # one arm joint


def _closures(q):
    return (sd.LoopClosures.point(MODEL, HANDS[0], HANDS[1], q=q)
            + sd.LoopClosures.distance(MODEL, "head_1", "torso", q=q))


# name -> function of (q, v, tau) whose outputs are arrays
CALLS = {
    "forward_dynamics": lambda q, v, t: sd.forward_dynamics(MODEL, q, v, t),
    "inverse_dynamics": lambda q, v, t: sd.inverse_dynamics(MODEL, q, v, t),
    "mass_matrix": lambda q, v, t: sd.mass_matrix(MODEL, q),
    "inverse_mass_matrix": lambda q, v, t: sd.inverse_mass_matrix(MODEL, q),
    "operational_space_dynamics": lambda q, v, t: sd.operational_space_dynamics(MODEL, q, v, HANDS),
    "dynamically_consistent_inverse": lambda q, v, t: sd.dynamically_consistent_inverse(MODEL, q, HANDS),
    "osc_torque": lambda q, v, t: sd.osc_torque(MODEL, q, v, HANDS, jnp.zeros(12), null_torque=t),
    "simultaneous_impulses": lambda q, v, t: sd.simultaneous_impulses(
        MODEL, q, v, HANDS, jnp.array([[0.0, 0, 0, 0, 0, 1], [0.0, 0, 0, 1, 0, 0]])),
    "underactuated_computed_torque": lambda q, v, t: sd.underactuated_computed_torque(
        MODEL, q, v, PRESCRIBED, [sd.PointTask(HANDS[0])], jnp.zeros(3), t),
    "constrained_forward_dynamics": lambda q, v, t: sd.constrained_forward_dynamics(MODEL, q, v, t, _closures(q)),
    "constrained_forward_dynamics projected": lambda q, v, t: sd.constrained_forward_dynamics(
        MODEL, q, v, t, _closures(q), method="projected"),
    "constraint_jacobian": lambda q, v, t: (sd.constraint_jacobian(MODEL, q, _closures(Q)),
                                            sd.constraint_residual(MODEL, q, _closures(Q))),
    "energies": lambda q, v, t: sd.kinetic_energy(MODEL, q, v) + sd.potential_energy(MODEL, q),
    "step": lambda q, v, t: sd.step(MODEL, State(q, v, 0.0), q[7:], 1e-3, contact=GROUND, actuators=SERVOS),
    "rigid contact step": lambda q, v, t: sd.step(MODEL, State(q, v, 0.0), t, 1e-3, contact=RigidContact(GROUND)),
    "delassus_matrix": lambda q, v, t: (delassus_matrix(MODEL, GROUND, q), contact_jacobian(MODEL, GROUND, q)),
    "home_state": lambda q, v, t: sd.home_state(MODEL, jax.random.PRNGKey(3), points=GROUND, q=q),
}


# the projected method is the dense test oracle; its gradient (through a full SVD) is not meant for use
FORWARD_ONLY = {"constrained_forward_dynamics projected"}


def _dot_precisions(jaxpr, found: list) -> None:
    """Append ``(precision, where)`` of every ``dot_general`` in ``jaxpr`` and its sub-jaxprs."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            frames = [f for f in eqn.source_info.traceback.frames if "/sodyn/" in f.file_name]
            where = ", ".join(f"{f.file_name.rsplit('/sodyn/', 1)[-1]}:{f.line_num}" for f in frames[:3])
            found.append((eqn.params["precision"], where or "outside sodyn"))
        for inner in sub_jaxprs(eqn):
            _dot_precisions(inner, found)


def _sum_of_outputs(fn):
    def total(q, v, t):
        leaves = [x for x in jax.tree_util.tree_leaves(fn(q, v, t)) if jnp.issubdtype(jnp.result_type(x), jnp.floating)]
        return sum(jnp.sum(x) for x in leaves)

    return total


def _low_precision_products(programs) -> list[str]:
    """Where a ``dot_general`` of the traced ``programs`` is below ``Precision.HIGHEST``."""
    found: list = []
    with jax.default_matmul_precision("bfloat16"):  # the lowest default a caller can set
        for program in programs:
            _dot_precisions(jax.make_jaxpr(program)(Q, V, TAU).jaxpr, found)
    highest = (lax.Precision.HIGHEST, lax.Precision.HIGHEST)
    return sorted({where for precision, where in found if precision != highest})


@pytest.mark.fast
@pytest.mark.parametrize("name", list(CALLS))
def test_every_product_is_traced_at_highest_precision(name):
    low = _low_precision_products([CALLS[name]])
    assert not low, f"{name}: dot_general below full precision at {low}"


@pytest.mark.parametrize("name", [n for n in CALLS if n not in FORWARD_ONLY])
def test_every_product_of_the_gradient_is_traced_at_highest_precision(name):
    """Reverse mode too: custom derivative rules are traced after the function returns, outside
    its ``full_precision`` context."""
    low = _low_precision_products([jax.grad(_sum_of_outputs(CALLS[name]), argnums=(0, 1, 2))])
    assert not low, f"{name}: dot_general below full precision in the gradient at {low}"
