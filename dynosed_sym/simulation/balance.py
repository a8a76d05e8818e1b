"""The variance balance along a direction of θ: which sizes of the drift the data's spread allows.

For a stationary law of ``dx = f dt + G dW`` (``D = ½GGᵀ``) the variance of every coordinate is
constant (:mod:`.stationarity`, φ = x̃_i²)::

    m_i(θ) = E[2 f_i(x; θ) x̃_i + 2 D_ii(x)] = 0,        x̃ = x − E[x].

The noise term fixes how strong the drift must be to hold the data's spread: it is the one
moment condition that sees the drift's *overall scale* through D, which the kernel features of
both routes may barely see (an oscillator whose law keeps its shape when f is scaled: the
scale is then a flat unresolved direction, and the resolved estimate is ≈ 0 along it).

For a drift affine in θ, ``m_i(θ̂ + c·u) = ā_i + c·b̄_i`` along a direction u of parameter space,
with ``a = 2 f_i(x; θ̂) x̃_i + 2 D_ii`` and ``b = 2 (U(x)u)_i x̃_i`` averaged over the rows (a drift
not affine in θ: its θ-Jacobian at θ̂, the linearisation).  Each coordinate gives a Fieller set
of the components c it allows — ``(ā_i + c b̄_i)² ≤ z²·Var(ā_i + c b̄_i)`` with the variances of the
means from independent groups of rows, and θ̂'s own uncertainty added to ``Var(ā_i)`` — and the
set of :func:`balance_sets` is their intersection, each at level ``1 − α/d`` (Bonferroni).  A
coordinate whose ``b̄_i`` is within its noise (``b̄_i² ≤ z²·Var(b̄_i)``) says nothing about c and is
left out (its Fieller set would be two far rays, or the line): the set is a bounded interval
where the balance sees u, the whole line where it does not (a rotation, a structurally null
direction), empty where no component along u balances every coordinate.  Other directions
whose components are unknown (``nuisance=``) add what they move ``ā_i`` by to its noise.

Used by the fits (:mod:`dynosed_sym.routes.stationarity`) to check the scale τ that sizes the
component of the truth along a flat unresolved direction (:mod:`dynosed_sym.solve.flat`).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from ..kernels.blas import limited_blas
from .functions import model_functions
from .stationarity import column_exponents

__all__ = ["balance_sets", "outside", "BALANCE_LEVEL"]

#: Confidence level of the sets of :func:`balance_sets` (over all coordinates together): a set
#: that misses the range an interval assumes is strong evidence, not a 5 % chance.
BALANCE_LEVEL = 0.99


def _fieller(a, b, vaa, vab, vbb, z):
    """The set ``{c : (a + c b)² ≤ z² (vaa + 2c vab + c² vbb)}`` as a list of closed intervals."""
    qa, qb, qc = b * b - z * z * vbb, a * b - z * z * vab, a * a - z * z * vaa
    if qa <= 0:  # b not seen against its noise: this coordinate says nothing about c
        return [(-np.inf, np.inf)]
    disc = qb * qb - qa * qc
    if disc < 0:
        return []
    r = np.sqrt(disc)
    return [((-qb - r) / qa, (-qb + r) / qa)]


def _intersect(sets):
    out = [(-np.inf, np.inf)]
    for s in sets:
        out = [
            (max(a0, b0), min(a1, b1))
            for a0, a1 in out
            for b0, b1 in s
            if max(a0, b0) <= min(a1, b1)
        ]
    return out


def balance_sets(
    model, theta, X, groups, directions, cov=None, nuisance=None, test=None, level=BALANCE_LEVEL
):
    """For each column u of ``directions`` (n, k): the components c with which ``θ̂ + c·u``
    balances the variance of every coordinate (module docstring), a list of closed intervals
    (``[]``: none; ``[(-inf, inf)]``: the balance does not see u).

    ``X`` (rows, d) and ``groups`` (rows,) as :func:`~.stationarity.check_stationarity` takes
    them (the rows evaluated; groups independent); ``cov`` (n, n): θ̂'s covariance, whose effect
    on ``ā`` (by the delta method) is added to its sampling noise; entries that are not finite
    count as 0 (the directions themselves carry what the data leave open).

    ``nuisance`` (k,): the standard deviation of the unknown component along each direction
    while another is tested (a prior's τ; inf: unbounded); what it moves ``ā_i`` by enters
    that coordinate's noise (a direction the balance does not see, ``b̄_i`` within its noise,
    moves nothing).  ``test`` (k,) bool: the directions to give sets for (default all; the
    others are only nuisance, and get None)."""
    with limited_blas():
        return _balance_sets(model, theta, X, groups, directions, cov, nuisance, test, level)


def _balance_sets(model, theta, X, groups, directions, cov, nuisance, test, level):
    theta = np.asarray(theta, dtype=float)
    U = np.asarray(directions, dtype=float).reshape(theta.size, -1)
    fn = model_functions(model)
    d, K = model.d, U.shape[1]
    ids, inv = np.unique(groups, return_inverse=True)
    G = ids.size
    if G < 2 or K == 0:
        return [[(-np.inf, np.inf)] for _ in range(K)]
    test = np.ones(K, dtype=bool) if test is None else np.asarray(test, dtype=bool)
    with np.errstate(under="ignore", over="ignore"):
        a, b, vaa, vab, vbb, shift = _moments(fn, theta, X, inv, G, U, cov)
    z = float(norm.ppf(1.0 - (1.0 - level) / (2.0 * d)))
    moved = np.zeros((d, K))  # the variance a nuisance component puts into ā_i, per direction
    if nuisance is not None:
        sd = np.asarray(nuisance, dtype=float)
        seen = b * b > z * z * vbb
        with np.errstate(invalid="ignore", over="ignore"):
            moved = np.where(seen, np.ldexp(b * sd[None, :], shift[:, None]) ** 2, 0.0)
    total = moved.sum(axis=1)
    out = []
    for j in range(K):
        if not test[j]:
            out.append(None)
            continue
        own = moved[:, j]
        others = total - own if np.isfinite(own).all() else np.delete(moved, j, 1).sum(axis=1)
        sets = []
        for i in range(d):
            if not np.isfinite(others[i]):  # an unbounded component moves this coordinate
                continue
            s = _fieller(a[i], b[i, j], vaa[i] + others[i], vab[i, j], vbb[i, j], z)
            with np.errstate(over="ignore"):  # c in the coordinate's units: c' · 2^(e_a − e_b)
                sets.append([(np.ldexp(lo, -shift[i]), np.ldexp(hi, -shift[i])) for lo, hi in s])
        out.append(_intersect(sets))
    return out


def _moments(fn, theta, X, inv, G, U, cov):
    """ā (d,), b̄ (d, K) and the variances of the means, each coordinate i in units of powers of
    two — ā_i in 2^{e_a,i}, b̄_i in 2^{e_b,i} — so that data far beyond unit scale overflow
    nothing (data × 1e80 with θ̂ ~ 1e-160: b̄ ~ 1e160, its square beyond double range); and
    ``shift = e_b − e_a`` (the set of c in those units is c · 2^shift)."""
    d, n, K = X.shape[1], theta.size, U.shape[1]
    N = X.shape[0]
    Xc = X - X.mean(axis=0)
    ex = column_exponents(Xc)
    Xs = np.ldexp(Xc, -ex)
    F = fn.drift(X, theta)
    ef = column_exponents(F)
    Dx = fn.diffusion(X[:1] if fn.constant_D else X)
    dd = np.broadcast_to(np.einsum("nii->ni", Dx), F.shape)
    ea = np.maximum(ef + ex, column_exponents(dd))
    Sa = np.zeros((G, d))  # group sums of a = 2 f_i x̃_i + 2 D_ii, in units 2^{e_a,i}
    np.add.at(
        Sa, inv, 2.0 * np.ldexp(np.ldexp(F, -ef) * Xs, ef + ex - ea) + 2.0 * np.ldexp(dd, -ea)
    )
    # group sums of 2 ∂f_i/∂θ_k x̃_i for the nonzero pairs (i, k), from the u distinct entries:
    # one (u, d) product per group, then gathered (a network's W·h(x): d columns for d² pairs)
    pairs, vals, column = fn.drift_theta_distinct(X, theta)
    eb = ex.copy()
    Sb = np.zeros((G, d, K))  # group sums of b_i along each direction, in units 2^{e_b,i}
    grad = np.zeros((d, n))  # ∂ā_i/∂θ_k, in units 2^{e_b,i}
    if pairs:
        ev = column_exponents(vals)
        Vs = np.ldexp(vals, -ev)
        M = np.stack([Vs[inv == g].T @ Xs[inv == g] for g in range(G)])  # (G, u, d)
        i_p, k_p = np.array(pairs, dtype=np.int64).T
        e_p = ev[column]
        top = np.full(d, np.iinfo(np.int64).min)
        np.maximum.at(top, i_p, e_p)
        eb = np.where(top > np.iinfo(np.int64).min, top, 0) + ex
        S_pair = 2.0 * np.ldexp(M[:, column, i_p], e_p - top[i_p])  # (G, pairs)
        np.add.at(grad, (i_p, k_p), S_pair.sum(axis=0) / N)
        for i in np.unique(i_p):
            on = i_p == i
            Sb[:, i, :] = S_pair[:, on] @ U[k_p[on], :]
    counts = np.bincount(inv, minlength=G).astype(float)
    a, b = Sa.sum(axis=0) / N, Sb.sum(axis=0) / N
    da = Sa - counts[:, None] * a[None, :]  # n_g (m_g − m)
    db = Sb - counts[:, None, None] * b[None, :, :]
    f = G / (G - 1) / N**2  # the variance of a mean from the group means
    vaa = (da**2).sum(axis=0) * f
    vab = np.einsum("gi,gik->ik", da, db) * f
    vbb = (db**2).sum(axis=0) * f
    shift = eb - ea
    if cov is not None:  # θ̂'s own uncertainty in ā_i (delta method), in ā_i's units
        C = np.where(np.isfinite(cov), np.asarray(cov, dtype=float), 0.0)
        extra = np.maximum(np.einsum("ik,kl,il->i", grad, C, grad), 0.0)
        vaa = vaa + np.ldexp(extra, 2 * shift)
    return a, b, vaa, vab, vbb, shift


def outside(intervals, lo, hi):
    """True when the union of closed ``intervals`` misses ``[lo, hi]`` (an empty union too)."""
    return not any(a <= hi and b >= lo for a, b in intervals)
