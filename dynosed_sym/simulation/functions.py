"""NumPy evaluation of a model's drift, its state Jacobian, D(x) and the simulator's noise matrix
G(x) at a few thousand points (SymPy ``lambdify``, once per model): what the start-state choice
and the stationarity checks need, without compiling extra Numba kernels.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import sympy as sp

from ..codegen.spec import _noise_matrix, spec_hash
from ..model.derivation import almost_everywhere

__all__ = ["ModelFunctions", "model_functions"]

_CACHE: dict = {}


#: Functions whose value jumps, and whose value has kinks (a jump in the derivative; x/|x| jumps).
_JUMPS = (sp.sign, sp.Heaviside, sp.floor, sp.ceiling)
_KINKS = (sp.Abs, sp.Min, sp.Max)


class ModelFunctions:
    """Vectorised f(x; θ), ∂f/∂x (x; θ), ∇·∇·D(x), D(x) and G(x) of one model.

    Every method takes X (n, d) and returns arrays with n as the first axis; constants are
    broadcast.  ``G`` is None when the simulator's noise matrix is constant.
    """

    def __init__(self, model):
        state, params = list(model.state), list(model.params)
        f = model.drift
        D = model.D
        div_D = [sum(sp.diff(D[i, j], state[j]) for j in range(model.d)) for i in range(model.d)]
        div_div_D = almost_everywhere(sum(sp.diff(div_D[i], state[i]) for i in range(model.d)))
        self._args = state + params  # (almost-everywhere derivatives: no DiracDelta terms)
        self._model = model
        self.d = model.d
        self._f = sp.lambdify(self._args, list(f), "numpy")
        self._D = sp.lambdify(state, D.tolist(), "numpy")
        self._divdiv = sp.lambdify(state, div_div_D, "numpy")
        self.constant_D = not any(e.free_symbols & set(state) for e in D)
        G, _ = _noise_matrix(model)
        self._G = None
        if G is not None and any(e.free_symbols for e in G):
            self._G = sp.lambdify(state, G.tolist(), "numpy")
            self._G_shape = G.shape

    def _steps(self, exprs, kinds, own=False):
        """Sorted names of the functions of ``kinds`` in ``exprs`` whose argument depends on the
        state (``own``: on the state of the expression's own row, x_i in f_i)."""
        state = list(self._model.state)
        found = set()
        for i, e in enumerate(exprs):
            wanted = {state[i]} if own else set(state)
            found |= {
                type(a).__name__ for a in sp.sympify(e).atoms(*kinds) if a.free_symbols & wanted
            }
        return sorted(found)

    @cached_property
    def drift_jumps(self):
        """The step functions (sign, Heaviside, floor, ceiling) of the state in the drift: where
        f jumps, the stationary density's gradient jumps too."""
        return self._steps(self._model.drift, _JUMPS)

    @cached_property
    def drift_not_smooth(self):
        """The step and kink functions (also Abs, Min, Max: x/|x| is a jump) of x_i in f_i:
        ∂f_i/∂x_i taken almost everywhere then misses the point masses on the jumps, so the
        divergence is taken by finite differences (:mod:`.stationarity`)."""
        return self._steps(self._model.drift, _JUMPS + _KINKS, own=True)

    @cached_property
    def diffusion_not_smooth(self):
        """The step and kink functions of the state in D: ∇·∇·D (second derivatives) then has
        point masses the almost-everywhere derivatives miss."""
        return self._steps(self._model.D, _JUMPS + _KINKS)

    def divergence_differences(self, X, theta, rel_step):
        """∇·f (n,) by central differences, step ``rel_step`` × each coordinate's standard
        deviation: a jump of f_i across x_i enters as its size over the step where a row is within
        a step of it, so the mean over the rows holds the jump's point mass (to O(step))."""
        out = np.zeros(X.shape[0])
        for j, up, down, width in _central_steps(X, rel_step, range(self.d)):
            out += (self.drift(up, theta)[:, j] - self.drift(down, theta)[:, j]) / width
        return out

    @cached_property
    def _symbolic_jacobian(self):
        """∂f/∂x (d, d) in SymPy, built on first use: d² entries, seconds at d = 30, which the
        checks of an affine drift do not need."""
        return _state_jacobian(self._model.drift, list(self._model.state))

    @cached_property
    def _jac(self):
        """The whole ∂f/∂x lambdified (on first use)."""
        return sp.lambdify(self._args, self._symbolic_jacobian.tolist(), "numpy")

    @cached_property
    def linear(self):
        """∂f/∂x does not depend on the state (a drift linear in x; not one with steps or kinks of
        the state, whose almost-everywhere Jacobian can be constant: −a·sign(x))."""
        if self._steps(self._model.drift, _JUMPS + _KINKS):
            return False
        parts = self._jacobian_terms
        if parts is not None:
            return not parts[0]  # no state-dependent derivative
        state = set(self._model.state)
        return not any(e.free_symbols & state for e in self._symbolic_jacobian)

    @cached_property
    def _jacobian_terms(self):
        """For an affine drift ``f = U(x)θ + v(x)``: ``∂f_i/∂x_j = Σ_k θ_k ∂_jU_ik + ∂_jv_i`` as
        terms ``(i, j, k, u)`` (k = −1 for v) over the *distinct* state-dependent derivatives
        ``u`` (one lambdified list), and the terms with constant derivatives ``(i, j, k, c)``.
        A network ``W·h(x)`` has d² entries in ∂f/∂x but only d distinct ``h'(x_j)``.  None for a
        drift not affine in θ."""
        der = self._model.derivation
        if not der.is_affine:
            return None
        state = list(self._model.state)
        index = {x: j for j, x in enumerate(state)}
        unique, terms, consts, derivative = {}, [], [], {}
        pieces = [((i, k), e) for (i, k), e in sorted(der.entries.items())]
        pieces += [((i, -1), e) for i, e in enumerate(der.v)]
        for (i, k), e in pieces:
            e = sp.sympify(e)
            for j in sorted(index[x] for x in e.free_symbols if x in index):
                if (e, j) not in derivative:  # a network repeats each h(x_j) d times
                    derivative[e, j] = almost_everywhere(sp.diff(e, state[j]))
                dj = derivative[e, j]
                if dj.is_zero:
                    continue
                if dj.free_symbols & set(state):
                    terms.append((i, j, k, unique.setdefault(dj, len(unique))))
                else:
                    consts.append((i, j, k, float(dj)))
        fn = sp.lambdify(state, list(unique), "numpy") if unique else None
        return terms, consts, len(unique), fn

    def mean_jacobian(self, X, theta, rows=4096):
        """(J̄ (d, d), ∇·f (n,)): the mean of ∂f/∂x over the rows of X and its trace at each row.

        An affine drift evaluates only its distinct state-dependent derivatives (``rows`` rows at
        a time) and combines them with θ; any other drift evaluates the whole Jacobian."""
        theta = np.asarray(theta, dtype=float).reshape(-1)
        n, d = X.shape[0], self.d
        parts = self._jacobian_terms
        if parts is None:
            Jsum, div = np.zeros((d, d)), np.empty(n)
            for lo in range(0, n, rows):
                J = self.jacobian(X[lo : lo + rows], theta)
                Jsum += J.sum(axis=0)
                div[lo : lo + rows] = np.trace(J, axis1=1, axis2=2)
            return Jsum / max(n, 1), div
        terms, consts, n_unique, fn = parts
        Jbar, div = np.zeros((d, d)), np.zeros(n)
        coef = np.array([1.0 if k < 0 else theta[k] for _, _, k, _ in terms + consts])
        for (i, j, _, c), a in zip(consts, coef[len(terms) :]):
            Jbar[i, j] += a * c
            if i == j:
                div += a * c
        if not terms:
            return Jbar, div
        means, on_diag = np.zeros(n_unique), np.zeros(n_unique)
        for (i, j, _, u), a in zip(terms, coef[: len(terms)]):
            if i == j:
                on_diag[u] += a
        diag = np.flatnonzero(on_diag)  # (an off-diagonal inf must not reach the trace)
        for lo in range(0, n, rows):
            vals = self._call(fn, X[lo : lo + rows], None, (n_unique,))  # (rows, n_unique)
            means += vals.sum(axis=0)
            div[lo : lo + rows] += vals[:, diag] @ on_diag[diag]
        means /= max(n, 1)
        for (i, j, _, u), a in zip(terms, coef[: len(terms)]):
            Jbar[i, j] += a * means[u]
        return Jbar, div

    @cached_property
    def _f_theta(self):
        """([(i, k)], (one lambdified list of the distinct entries, their number, the entry of each
        pair)) of the nonzero ∂f_i/∂θ_k (for the uncertainty of θ̂), from the derivation's sparse
        entries; built on first use (fits only)."""
        entries = self._model.derivation.entries
        pairs, unique, column = [], {}, []
        for (i, k), e in sorted(entries.items()):
            e = almost_everywhere(e)
            if not e.is_zero:
                pairs.append((i, k))
                column.append(unique.setdefault(e, len(unique)))
        # the distinct entries once (a network W·h(x): d of them for d² pairs), then repeated
        return pairs, (sp.lambdify(self._args, list(unique), "numpy"), len(unique), column)

    @cached_property
    def _div_theta(self):
        """([k], one lambdified list) of the nonzero ∂(∇·f)/∂θ_k = Σ_i ∂/∂x_i ∂f_i/∂θ_k."""
        state = self._model.state
        acc = {}
        for (i, k), e in self._model.derivation.entries.items():
            acc.setdefault(k, []).append(sp.diff(e, state[i]))
        ks, exprs = [], []
        for k in sorted(acc):
            e = almost_everywhere(sp.Add(*acc[k]))
            if not e.is_zero:
                ks.append(k)
                exprs.append(e)
        return ks, sp.lambdify(self._args, exprs, "numpy")

    @staticmethod
    def _fill(vals, n, shape):
        """The entries (each (n,) or a scalar) as an (n, *shape) array: written entry by entry
        into contiguous rows of its transpose (a column at a time strides through memory: at
        d = 20 that was 60 % of the Jacobian's time), returned as a view."""
        vals = list(_flatten(vals))
        flat = np.empty((len(vals), n))
        for k, v in enumerate(vals):
            flat[k] = np.asarray(v, dtype=float)
        return flat.T.reshape((n,) + shape)

    def _call(self, fn, X, theta, shape):
        cols = [X[:, j] for j in range(self.d)]
        extra = [] if theta is None else [float(t) for t in np.asarray(theta).reshape(-1)]
        with np.errstate(all="ignore"):
            return self._fill(fn(*cols, *extra), X.shape[0], shape)

    def drift(self, X, theta):
        """f(x; θ) (n, d); an affine drift from its distinct entries of U and from v (rows where
        that is not finite from the whole drift)."""
        parts = self._affine_drift
        if parts is None:
            return self._call(self._f, X, theta, (self.d,))
        rows, cols, column, n_unique, fn_u, fn_v = parts
        theta = np.asarray(theta, dtype=float).reshape(-1)
        F = self._call(fn_v, X, None, (self.d,))  # (a fresh array)
        if n_unique:
            weights = np.zeros((n_unique, self.d))  # f_i = Σ_u vals_u · Σ_{k: entry u} θ_k
            np.add.at(weights, (column, rows), theta[cols])
            with np.errstate(all="ignore"):
                F += self._call(fn_u, X, theta, (n_unique,)) @ weights
        # where it is not finite (an overflow, an inf state) the split order matters (inf·0 in
        # the product, x·ρ − x·z against x·(ρ − z)): those rows from the whole drift, as before
        bad = ~np.isfinite(F).all(axis=1)
        if bad.any():
            F[bad] = self._call(self._f, X[bad], theta, (self.d,))
        return F

    @cached_property
    def _affine_drift(self):
        """For an affine drift ``f = U(x)θ + v(x)``: the nonzero entries (i, k) of U — the
        ∂f_i/∂θ_k of :attr:`_f_theta`, each pointing at one of its *distinct* expressions (one
        lambdified list: a network W·h(x) has d of them for d² entries, which the whole drift
        lambdified evaluates d times each) — and v lambdified; None for a drift not affine in θ."""
        der = self._model.derivation
        if not der.is_affine:
            return None
        pairs, (fn_u, n_unique, column) = self._f_theta
        ik = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        rows, cols = ik[:, 0], ik[:, 1]
        fn_v = sp.lambdify(list(self._model.state), [sp.sympify(e) for e in der.v], "numpy")
        return rows, cols, np.asarray(column, dtype=np.intp), n_unique, fn_u, fn_v

    def jacobian(self, X, theta):
        """∂f_i/∂x_j (n, d, d)."""
        return self._call(self._jac, X, theta, (self.d, self.d))

    def row_jacobians(self, X, theta):
        """∂f_i/∂x_j (n, d, d) at each row; an affine drift's from its distinct state-dependent
        derivatives (as :meth:`mean_jacobian`: no d² symbolic entries at network size)."""
        parts = self._jacobian_terms
        if parts is None:
            return self.jacobian(X, theta)
        theta = np.asarray(theta, dtype=float).reshape(-1)
        terms, consts, n_unique, fn = parts
        J = np.zeros((X.shape[0], self.d, self.d))
        for i, j, k, c in consts:
            J[:, i, j] += (1.0 if k < 0 else theta[k]) * c
        if terms:
            vals = self._call(fn, X, None, (n_unique,))
            for i, j, k, u in terms:
                J[:, i, j] += (1.0 if k < 0 else theta[k]) * vals[:, u]
        return J

    def drift_theta(self, X, theta):
        """Nonzero ∂f_i/∂θ_k at the rows: list of (i, k, values (n,))."""
        pairs, vals, column = self.drift_theta_distinct(X, theta)
        return [(i, k, vals[:, u]) for (i, k), u in zip(pairs, column)]

    def drift_theta_distinct(self, X, theta):
        """``([(i, k)], values (n, u), column (pairs,))``: the u distinct nonzero ∂f_i/∂θ_k at
        the rows, pair q's values in ``values[:, column[q]]`` (a network W·h(x) has d distinct
        entries for d² pairs: products over the rows are then taken on u columns, not d²)."""
        pairs, (fn, n_unique, column) = self._f_theta
        if not pairs:
            return pairs, np.zeros((X.shape[0], 0)), np.zeros(0, dtype=np.int64)
        vals = self._call(fn, X, theta, (n_unique,))
        return pairs, vals, np.asarray(column, dtype=np.int64)

    def divergence_theta(self, X, theta, rel_step=None):
        """Nonzero ∂(∇·f)/∂θ_k at the rows: list of (k, values (n,)); with ``rel_step`` by
        central differences of ∂f_i/∂θ_k across x_i (as :meth:`divergence_differences`)."""
        if rel_step is not None:
            return self._divergence_theta_differences(X, theta, rel_step)
        ks, fn = self._div_theta
        vals = self._call(fn, X, theta, (len(ks),))
        return [(k, vals[:, q]) for q, k in enumerate(ks)]

    def _divergence_theta_differences(self, X, theta, rel_step):
        pairs, _, column = self.drift_theta_distinct(X[:1], theta)
        on = {j: [(k, u) for (i, k), u in zip(pairs, column) if i == j] for j in range(self.d)}
        acc = {}
        for j, up, down, width in _central_steps(X, rel_step, [j for j in on if on[j]]):
            diff = (
                self.drift_theta_distinct(up, theta)[1] - self.drift_theta_distinct(down, theta)[1]
            )
            for k, u in on[j]:
                acc[k] = acc.get(k, 0.0) + diff[:, u] / width
        return sorted(acc.items())

    def diffusion(self, X):
        """D(x) (n, d, d)."""
        return self._call(self._D, X, None, (self.d, self.d))

    def div_div_D(self, X):
        """∇·∇·D (n,) (zero for a constant D)."""
        return self._call(self._divdiv, X, None, ())

    def noise(self, X):
        """The simulator's G(x) (n, d, d'), or None when it is constant."""
        if self._G is None:
            return None
        return self._call(self._G, X, None, self._G_shape)


def _central_steps(X, rel_step, coords):
    """``(j, X + h_j e_j, X − h_j e_j, 2 h_j)`` for the coordinates j, the step ``rel_step`` ×
    the coordinate's standard deviation (1 where it is 0): the central differences of
    :meth:`ModelFunctions.divergence_differences` and of its θ-derivatives."""
    sd = X.std(axis=0)
    for j in coords:
        h = rel_step * (sd[j] if sd[j] > 0 else 1.0)
        up, down = X.copy(), X.copy()
        up[:, j] += h
        down[:, j] -= h
        yield j, up, down, 2.0 * h


def _state_jacobian(f, state):
    """∂f/∂x (d, d), almost everywhere: every additive term of f_i differentiated by the states it
    contains only (d² term derivatives for a network whose f_i has d terms, not d³)."""
    index = {x: j for j, x in enumerate(state)}
    J = sp.zeros(len(f), len(state))
    for i, fi in enumerate(f):
        parts = {}
        for term in sp.Add.make_args(fi):
            for j in sorted(index[x] for x in term.free_symbols if x in index):
                parts.setdefault(j, []).append(sp.diff(term, state[j]))
        for j, ds in parts.items():
            J[i, j] = almost_everywhere(sp.Add(*ds))
    return J


def _flatten(vals):
    if isinstance(vals, (list, tuple)):
        return [v for item in vals for v in _flatten(item)]
    return [vals]


def model_functions(model) -> ModelFunctions:
    """The :class:`ModelFunctions` of ``model`` (built once per declaration)."""
    key = spec_hash(model)
    fn = _CACHE.get(key)
    if fn is None:
        fn = _CACHE[key] = ModelFunctions(model)
    return fn
