"""Score estimators for the local route: ``s(x) = ∇log p(x)`` and its Jacobian at probes.

Every estimator has the same small interface:

* ``est(X, probes) -> (S, J)`` with ``S`` (M, d) the scores and ``J`` (M, d, d) their Jacobians
  (``J[i, j, l] = ∂s_j/∂x_l`` at probe i), so any callable of that form can be plugged into
  :func:`dynosed_sym.fit_local`;
* ``est.estimate(X, probes, n_blocks=B) -> ScoreEstimate``, which also returns delete-one-block
  (jackknife) estimates over B contiguous blocks of rows of X, from which the local route
  estimates the sampling noise of its linear system.

Estimators
----------
:class:`KernelScore` (``score="kernel"``)
    The Gaussian kernel estimator of docs/method.md §2 with temperature T (precision,
    1/bandwidth²):
    weights ``w_j ∝ exp(−T‖x − x_j‖²/2)``, ``ŝ(x) = T(Σ_j w_j x_j − x)``,
    ``∇ŝ(x) = T² Cov_w(x_j) − T I`` (the exact score of the Gaussian kernel density estimate).
    A compiled kernel makes two passes over the data per probe (minimum distance, then the
    weighted sums ``Σw``, ``Σw y``, ``Σw yyᵀ`` with ``y = x_j − x`` per block of rows): time
    O(M N d²), memory O(B M d²), never O(N²).  Its bias is the smoothing: for a Gaussian law
    N(μ, Σ) and many data it converges to the score of N(μ, Σ + I/T).
``KernelScore(T, deconvolve=True)`` (``score="local_gaussian"``)
    The same kernel-weighted moments read as a local Gaussian fit: ``s = C⁻¹m``,
    ``J = TI − C⁻¹`` (m, C: weighted mean of ``x_j − x`` and covariance).  Exact for a locally
    Gaussian p at any T, so it removes the smoothing bias of the plain kernel estimator.
:class:`ScoreMatching` (``score="score_matching"``)
    Local Hyvärinen score matching.  In the ball of radius r around each probe, with
    ``u = (x − x_probe)/r``, the log-density is modelled as ``ψ(u) = Σ_k α_k m_k(u)`` over the
    monomials of degree 1 … ``degree`` (2: ``hᵀu − ½uᵀPu``, a local Gaussian; 3 adds cubic
    terms).  The weighted objective

        E[ g(u)(½‖∇ψ‖² + Δψ) + ∇g·∇ψ ],   g(u) = (1 − ‖u‖²)^q  (q = ``weight_power``, default 2)

    equals ``½E[g‖∇ψ − ∇log p‖²]`` up to a constant for data restricted to the ball, because g
    vanishes on the ball's boundary and so kills the boundary terms of the integration by
    parts (the plain objective, g ≡ 1, is biased for data cut off at the edge).  It is
    quadratic in α: ``α = −G⁻¹c`` with ``G = Σ g ∇mᵀ∇m`` and ``c = Σ (g Δm + ∇mᵀ∇g)`` over the
    data in the ball.  Score ``∇ψ(0)/r`` and Jacobian ``∇²ψ(0)/r²``.  Memory O(n_ball·d·K) in
    chunks of rows.
:class:`CallableScore`
    Wraps a user function ``fn(X, probes) -> (S, J)``; the jackknife re-runs it without each
    block.
"""

from .base import ScoreEstimate, ScoreEstimator, check_scores
from .callable import CallableScore
from .kernel import KernelScore, kernel_score
from .matching import ScoreMatching, monomial_exponents, score_matching
from .select import estimate_scores, make_estimator

__all__ = [
    "ScoreEstimate",
    "ScoreEstimator",
    "KernelScore",
    "ScoreMatching",
    "CallableScore",
    "make_estimator",
    "estimate_scores",
    "kernel_score",
    "score_matching",
    "monomial_exponents",
    "check_scores",
]
