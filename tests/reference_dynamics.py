"""A slow plain-NumPy reference for rigid-body tree dynamics: one Python loop over bodies.

Written from the textbook algorithms in R. Featherstone, *Rigid Body Dynamics Algorithms*
(2008): the recursive Newton–Euler algorithm ``ID`` (Table 5.1), the composite-rigid-body
mass matrix of ``HandC`` (Table 6.2) and the articulated-body algorithm ``FDab`` (Table 7.1),
with explicit 6 × 6 spatial matrices.  It shares no code with sodyn's recursions; it only
uses sodyn's *public* conventions (``../shared/docs/DESIGN.md`` §3, ``sodyn/joints.py``):

* spatial vectors angular first, motion ``[ω; v]`` and force ``[n; f]``;
* a pose ``(R, p)`` places a child frame in its parent, ``x_parent = R x_child + p``;
  body ``i``'s pose in its parent body is the joint placement ``(R_T, p_T)`` followed by the
  joint transform ``(R_J(q), p_J(q))``;
* motion subspaces ``S`` are constant in the child frame (so ``Ṡ q̇ = 0``):

  ===========================  ===================  ==========================  ===========
  joint                        ``q``                ``(R_J, p_J)``              ``S``
  ===========================  ===================  ==========================  ===========
  revolute/continuous          ``θ``                ``(rot(a, θ), 0)``          ``[a; 0]``
  prismatic                    ``θ``                ``(I, θ a)``                ``[0; a]``
  helical (pitch ``h``)        ``θ``                ``(rot(a, θ), h θ a)``      ``[a; h a]``
  spherical                    ``[w, x, y, z]``     ``(R(quat), 0)``            ``[I₃; 0]``
  free                         ``[p, quat]``        ``(R(quat), p)``            ``I₆``
  planar (``v = [vx, vy, ωz]``)  ``[x, y, θ]``        ``(rot(e_z, θ), (x, y, 0))``  ``[e_vx e_vy e_ωz]``
  fixed                        none                 ``(I, 0)``                  none
  ===========================  ===================  ==========================  ===========

* gravity enters as the world accelerating by ``−g`` (Featherstone §5.3);
* ``f_ext[i]`` is an external force on body ``i`` in its own frame, about its origin;
* joint damping ``τ_d = d ⊙ q̇`` and the rotor armature ``τ_a = a ⊙ q̈`` of every dof (kinetic
  energy ``½ q̇ᵀ diag(a) q̇``).  For a free joint's linear part ``A = diag(a_v)`` that energy
  ``½ v_Jᵀ A v_J`` is written in the joint's body-frame velocity ``v_J = [ω_J; v_J]``, which
  is not a coordinate rate, so Euler–Poincaré on SE(3) adds the velocity force
  ``[v_J × A v_J; ω_J × A v_J]`` (sodyn's ``passive_joint_force``).  With
  ``Tree.carried_free_armature`` the reference instead models ``A`` as a translational
  inertia carried by the body, spatial inertia ``[[0, 0], [0, A]]`` in the body frame (its
  force ``v ×* I v = [v × A v; ω × A v]`` follows from the body inertia).  Without gravity
  (a carried mass has weight, armature has none) the two agree when the free joint hangs
  from the world, where ``v_J`` is the body's velocity; they differ (ancestor couplings in
  ``M``) when it hangs from a moving body.
"""

from __future__ import annotations

import dataclasses

import numpy as np

HINGES = ("revolute", "continuous", "prismatic", "helical")
NQ = {"spherical": 4, "free": 7, "planar": 3, "fixed": 0} | dict.fromkeys(HINGES, 1)
NV = {"spherical": 3, "free": 6, "planar": 3, "fixed": 0} | dict.fromkeys(HINGES, 1)


# --------------------------------------------------------------------------------------
# spatial algebra (Featherstone ch. 2, angular first)
# --------------------------------------------------------------------------------------


def skew(x: np.ndarray) -> np.ndarray:
    """``x~`` with ``x~ y = x × y``."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: ``exp(angle a~) = I + sin θ a~ + (1 − cos θ) a~²`` for a unit axis ``a``."""
    k = skew(axis)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k


def quaternion_rotation(quat: np.ndarray) -> np.ndarray:
    """The rotation ``R`` with ``R x = quat ⊗ x ⊗ quat*`` for ``quat = [w, x, y, z]``, i.e.
    ``R = (w² − |u|²) I + 2 u uᵀ + 2 w u~`` of the normalised quaternion ``(w, u)``."""
    quat = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    w, u = quat[0], quat[1:]
    return (w * w - u @ u) * np.eye(3) + 2.0 * np.outer(u, u) + 2.0 * w * skew(u)


def motion_transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """``ᶜX_p`` (Featherstone eq. 2.24) for a child frame at pose ``(R, p)`` in its parent:
    ``[[Rᵀ, 0], [−Rᵀ p~, Rᵀ]]`` maps parent motion vectors to the child frame.  Its transpose
    maps child force vectors to the parent (``ᵖX_c* = ᶜX_pᵀ``)."""
    rt = rotation.T
    x = np.zeros((6, 6))
    x[:3, :3] = rt
    x[3:, 3:] = rt
    x[3:, :3] = -rt @ skew(translation)
    return x


def crm(v: np.ndarray) -> np.ndarray:
    """Motion cross product matrix ``v×`` (eq. 2.31): ``[[ω~, 0], [v~, ω~]]``."""
    m = np.zeros((6, 6))
    m[:3, :3] = m[3:, 3:] = skew(v[:3])
    m[3:, :3] = skew(v[3:])
    return m


def crf(v: np.ndarray) -> np.ndarray:
    """Force cross product matrix ``v×* = −(v×)ᵀ`` (eq. 2.32)."""
    return -crm(v).T


def rigid_body_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """Spatial inertia about the frame origin (eq. 2.63): ``[[I_c + m c~ c~ᵀ, m c~], [m c~ᵀ, m 1]]``."""
    c = skew(com)
    out = np.zeros((6, 6))
    out[:3, :3] = inertia_com + mass * c @ c.T
    out[:3, 3:] = mass * c
    out[3:, :3] = mass * c.T
    out[3:, 3:] = mass * np.eye(3)
    return out


# --------------------------------------------------------------------------------------
# the tree
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tree:
    """A kinematic tree, bodies numbered so that ``parent[i] < i`` (``−1`` is the world).

    ``q_index[i]``/``v_index[i]`` are the entries of ``q``/``v`` that belong to body ``i``'s
    joint; ``armature``/``damping`` are per dof (``nv``).  Fixed joints are kept as bodies
    with no dof.
    """

    parent: list[int]
    joint_type: list[str]
    axis: np.ndarray  # (n, 3), unit
    pitch: np.ndarray  # (n,)
    placement_rotation: np.ndarray  # (n, 3, 3)
    placement_translation: np.ndarray  # (n, 3)
    mass: np.ndarray  # (n,)
    com: np.ndarray  # (n, 3), body frame
    inertia: np.ndarray  # (n, 3, 3), about the centre of mass, body axes
    gravity: np.ndarray  # (3,)
    q_index: list[np.ndarray]
    v_index: list[np.ndarray]
    armature: np.ndarray  # (nv,)
    damping: np.ndarray  # (nv,)
    carried_free_armature: bool = False  # a free joint's linear armature as a body inertia

    @property
    def n(self) -> int:
        return len(self.parent)

    @property
    def nv(self) -> int:
        return sum(NV[t] for t in self.joint_type)

    def subspace(self, i: int) -> np.ndarray:
        """``S_i`` (6 × nv_i) in body ``i``'s frame (table in the module docstring)."""
        kind, a = self.joint_type[i], self.axis[i]
        if kind in HINGES:
            rot = 0.0 if kind == "prismatic" else 1.0
            trans = {"prismatic": 1.0, "helical": self.pitch[i]}.get(kind, 0.0)
            return np.concatenate([rot * a, trans * a])[:, None]
        return np.eye(6)[:, {"spherical": [0, 1, 2], "free": list(range(6)),
                              "planar": [3, 4, 2], "fixed": []}[kind]]

    def joint_pose(self, i: int, qi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R_J, p_J)``: the child frame in the joint's parent-side frame."""
        kind, a = self.joint_type[i], self.axis[i]
        if kind in HINGES:
            theta = float(qi[0])
            rot = np.eye(3) if kind == "prismatic" else rotation_about(a, theta)
            trans = {"prismatic": 1.0, "helical": self.pitch[i]}.get(kind, 0.0)
            return rot, trans * theta * a
        if kind == "spherical":
            return quaternion_rotation(qi), np.zeros(3)
        if kind == "free":
            return quaternion_rotation(qi[3:]), np.asarray(qi[:3], dtype=float)
        if kind == "planar":
            return rotation_about(np.array([0.0, 0.0, 1.0]), qi[2]), np.array([qi[0], qi[1], 0.0])
        return np.eye(3), np.zeros(3)  # fixed

    def transforms(self, q: np.ndarray) -> list[np.ndarray]:
        """``ⁱX_λ(i) = X_J(q_i) X_T(i)`` for every body (motion, parent → body)."""
        out = []
        for i in range(self.n):
            rj, pj = self.joint_pose(i, q[self.q_index[i]])
            r = self.placement_rotation[i] @ rj
            p = self.placement_translation[i] + self.placement_rotation[i] @ pj
            out.append(motion_transform(r, p))
        return out

    def body_inertia(self, i: int) -> np.ndarray:
        """Body ``i``'s spatial inertia (plus ``[[0, 0], [0, A]]`` with ``carried_free_armature``)."""
        inertia = rigid_body_inertia(self.mass[i], self.com[i], self.inertia[i])
        if self.carried_free_armature and self.joint_type[i] == "free":
            inertia[3:, 3:] += np.diag(self.armature[self.v_index[i][3:]])
        return inertia

    def rotor_armature(self) -> np.ndarray:
        """Armature per dof acting as ``a ⊙ q̈`` (all of it unless ``carried_free_armature``)."""
        out = np.array(self.armature, dtype=float)
        for i, kind in enumerate(self.joint_type):
            if kind == "free" and self.carried_free_armature:
                out[self.v_index[i][3:]] = 0.0
        return out

    def passive_force(self, v: np.ndarray) -> np.ndarray:
        """Joint forces that depend on ``q̇`` alone: damping ``d ⊙ q̇`` and, for the rotor model
        of a free joint's linear armature, ``[v_J × A v_J; ω_J × A v_J]`` (module docstring)."""
        out = self.damping * v
        for i, kind in enumerate(self.joint_type):
            if kind == "free" and not self.carried_free_armature:
                w, lin = v[self.v_index[i][:3]], v[self.v_index[i][3:]]
                momentum = self.armature[self.v_index[i][3:]] * lin
                out[self.v_index[i]] += np.concatenate([np.cross(lin, momentum), np.cross(w, momentum)])
        return out


def tree_from_model(model) -> Tree:
    """Read a sodyn :class:`~sodyn.Model`'s public fields into a :class:`Tree` (NumPy).

    The model's bodies are already in topological order with fixed joints merged."""
    n = model.n_bodies
    arr = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    return Tree(
        parent=[int(p) for p in model.parent], joint_type=list(model.joint_types),
        axis=arr(model.axis), pitch=arr(model.pitch),
        placement_rotation=arr(model.tree_rotation), placement_translation=arr(model.tree_translation),
        mass=arr(model.mass), com=arr(model.com), inertia=arr(model.inertia), gravity=arr(model.gravity),
        q_index=[np.arange(model.joint_q_slice(k).start, model.joint_q_slice(k).stop) for k in range(n)],
        v_index=[np.arange(model.joint_v_slice(k).start, model.joint_v_slice(k).stop) for k in range(n)],
        armature=arr(model.armature), damping=arr(model.damping),
    )


# --------------------------------------------------------------------------------------
# algorithms
# --------------------------------------------------------------------------------------


def _world_acceleration(tree: Tree) -> np.ndarray:
    """``a₀ = −a_g``: the fictitious upward acceleration of the base that models gravity."""
    return np.concatenate([np.zeros(3), -np.asarray(tree.gravity, dtype=float)])


def _forces(tree: Tree, f_ext: np.ndarray | None) -> np.ndarray:
    return np.zeros((tree.n, 6)) if f_ext is None else np.asarray(f_ext, dtype=float)


def inverse_dynamics(tree: Tree, q, v, a, f_ext=None) -> np.ndarray:
    """Recursive Newton–Euler ``ID`` (Featherstone Table 5.1):

        v_i = ⁱX_λ v_λ + S_i q̇_i,     a_i = ⁱX_λ a_λ + S_i q̈_i + v_i × S_i q̇_i,
        f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i,     τ_i = S_iᵀ f_i,     f_λ += ⁱX_λᵀ f_i,

    plus ``τ += armature ⊙ q̈ + passive(q̇)`` (damping and free-joint armature, module docstring)."""
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    xs, f_ext = tree.transforms(q), _forces(tree, f_ext)
    vel, acc, force = np.zeros((tree.n, 6)), np.zeros((tree.n, 6)), np.zeros((tree.n, 6))
    for i in range(tree.n):
        s, lam = tree.subspace(i), tree.parent[i]
        v_parent = np.zeros(6) if lam < 0 else vel[lam]
        a_parent = _world_acceleration(tree) if lam < 0 else acc[lam]
        vj = s @ v[tree.v_index[i]]
        vel[i] = xs[i] @ v_parent + vj
        acc[i] = xs[i] @ a_parent + s @ a[tree.v_index[i]] + crm(vel[i]) @ vj
        inertia = tree.body_inertia(i)
        force[i] = inertia @ acc[i] + crf(vel[i]) @ inertia @ vel[i] - f_ext[i]
    tau = np.zeros(tree.nv)
    for i in reversed(range(tree.n)):
        tau[tree.v_index[i]] = tree.subspace(i).T @ force[i]
        if tree.parent[i] >= 0:
            force[tree.parent[i]] += xs[i].T @ force[i]
    return tau + tree.rotor_armature() * a + tree.passive_force(v)


def mass_matrix(tree: Tree, q) -> np.ndarray:
    """Composite-rigid-body algorithm (the ``H`` part of ``HandC``, Table 6.2):

        I^c_λ += ⁱX_λᵀ I^c_i ⁱX_λ   (tips to base),
        H_ii = S_iᵀ I^c_i S_i,   F = I^c_i S_i,  then for j = λ(i), λ(λ(i)), …:
        F ← ʲ⁺X_jᵀ F,   H_ji = S_jᵀ F,   H_ij = H_jiᵀ,

    plus ``diag(armature)`` of the rotor dofs."""
    xs = tree.transforms(np.asarray(q, dtype=float))
    composite = [tree.body_inertia(i) for i in range(tree.n)]
    for i in reversed(range(tree.n)):
        if tree.parent[i] >= 0:
            composite[tree.parent[i]] = composite[tree.parent[i]] + xs[i].T @ composite[i] @ xs[i]
    m = np.zeros((tree.nv, tree.nv))
    for i in range(tree.n):
        vi = tree.v_index[i]
        f = composite[i] @ tree.subspace(i)
        m[np.ix_(vi, vi)] = tree.subspace(i).T @ f
        j = i
        while tree.parent[j] >= 0:
            f = xs[j].T @ f
            j = tree.parent[j]
            block = tree.subspace(j).T @ f
            m[np.ix_(tree.v_index[j], vi)] = block
            m[np.ix_(vi, tree.v_index[j])] = block.T
    return m + np.diag(tree.rotor_armature())


def mass_matrix_by_columns(tree: Tree, q) -> np.ndarray:
    """``M e_k = ID(q, 0, e_k) − ID(q, 0, 0)`` column by column (a check of :func:`mass_matrix`)."""
    zero = np.zeros(tree.nv)
    bias = inverse_dynamics(tree, q, zero, zero)
    return np.stack([inverse_dynamics(tree, q, zero, e) - bias for e in np.eye(tree.nv)], axis=1)


def forward_dynamics(tree: Tree, q, v, tau, f_ext=None) -> np.ndarray:
    """Articulated-body algorithm ``FDab`` (Featherstone Table 7.1), three passes:

    1. base to tips: ``v_i``, ``c_i = v_i × S_i q̇_i``, ``I^A_i = I_i``,
       ``p^A_i = v_i ×* I_i v_i − f_ext,i``;
    2. tips to base: ``U_i = I^A_i S_i``, ``D_i = S_iᵀ U_i + diag(armature_i)``,
       ``u_i = τ_i − passive_i(q̇) − S_iᵀ p^A_i`` (damping, free-joint armature), and into the parent
       ``I^a = I^A_i − U_i D_i⁻¹ U_iᵀ``, ``p^a = p^A_i + I^a c_i + U_i D_i⁻¹ u_i``,
       ``I^A_λ += ⁱX_λᵀ I^a ⁱX_λ``, ``p^A_λ += ⁱX_λᵀ p^a``;
    3. base to tips: ``a' = ⁱX_λ a_λ + c_i``, ``q̈_i = D_i⁻¹ (u_i − U_iᵀ a')``,
       ``a_i = a' + S_i q̈_i`` from ``a₀ = −a_g``.

    A fixed joint (no dof) passes its articulated inertia to the parent whole."""
    q, v, tau = (np.asarray(x, dtype=float) for x in (q, v, tau))
    xs, f_ext = tree.transforms(q), _forces(tree, f_ext)
    rotor, passive = tree.rotor_armature(), tree.passive_force(v)
    vel, bias_acc = np.zeros((tree.n, 6)), np.zeros((tree.n, 6))
    art_inertia, art_force = [], []
    for i in range(tree.n):
        s, lam = tree.subspace(i), tree.parent[i]
        vj = s @ v[tree.v_index[i]]
        vel[i] = xs[i] @ (np.zeros(6) if lam < 0 else vel[lam]) + vj
        bias_acc[i] = crm(vel[i]) @ vj
        inertia = tree.body_inertia(i)
        art_inertia.append(inertia)
        art_force.append(crf(vel[i]) @ inertia @ vel[i] - f_ext[i])
    big_u, d_inv, small_u = [None] * tree.n, [None] * tree.n, [None] * tree.n
    for i in reversed(range(tree.n)):
        s, vi = tree.subspace(i), tree.v_index[i]
        big_u[i] = art_inertia[i] @ s
        d_inv[i] = np.linalg.inv(s.T @ big_u[i] + np.diag(rotor[vi])) if vi.size else np.zeros((0, 0))
        small_u[i] = tau[vi] - passive[vi] - s.T @ art_force[i]
        lam = tree.parent[i]
        if lam >= 0:
            ia = art_inertia[i] - big_u[i] @ d_inv[i] @ big_u[i].T
            pa = art_force[i] + ia @ bias_acc[i] + big_u[i] @ d_inv[i] @ small_u[i]
            art_inertia[lam] = art_inertia[lam] + xs[i].T @ ia @ xs[i]
            art_force[lam] = art_force[lam] + xs[i].T @ pa
    qdd, acc = np.zeros(tree.nv), np.zeros((tree.n, 6))
    for i in range(tree.n):
        lam, vi = tree.parent[i], tree.v_index[i]
        a_prime = xs[i] @ (_world_acceleration(tree) if lam < 0 else acc[lam]) + bias_acc[i]
        qdd[vi] = d_inv[i] @ (small_u[i] - big_u[i].T @ a_prime)
        acc[i] = a_prime + tree.subspace(i) @ qdd[vi]
    return qdd


def forward_dynamics_dense(tree: Tree, q, v, tau, f_ext=None) -> np.ndarray:
    """``q̈ = M⁻¹ (τ − h)`` with ``h = ID(q, q̇, 0)``: a dense solve, to check :func:`forward_dynamics`."""
    h = inverse_dynamics(tree, q, v, np.zeros(tree.nv), f_ext)
    return np.linalg.solve(mass_matrix(tree, q), np.asarray(tau, dtype=float) - h)
