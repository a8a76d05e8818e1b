"""Is the learned density the stationary law?  Two scale-free checks.

1. **Residual ratio** ρ = E_q[R²] / E_q[(sᵀc)² + (sᵀDs)² + ⟨D, ∇s⟩² + e²]: the mean square of the
   stationary residual R = sᵀc − sᵀDs − ⟨D, ∇s⟩ + e (notation of :mod:`.dynamics`) relative to the
   mean square of the four terms it is made of, both under the learned density q.  It is
   invariant to rescaling time (f, D → λf, λD) and space, 0 exactly at the stationary law, and
   of order 0.01–1 when the terms do not cancel.  It sees the local shape of q; by construction
   it cannot see how mass is shared between metastable states (a residual is local: moving mass
   between wells separated by a barrier of ΔV changes R only by ~e^{−ΔV/D} there).
2. **Simulation check** (when training started from a simulation): the total variation between
   the mass that q and the simulation put in K soft cells — the responsibilities of the starting
   mixture's components — with the sampling noise of that statistic estimated from two halves of
   the simulated chains.  It sees the share of mass between wells that ρ cannot, coarsely.

Thresholds (:data:`RESIDUAL_RATIO_THRESHOLD`, :data:`SIM_TV_THRESHOLD`) were calibrated on runs
whose total variation to the exact law was known
(``python -m dynosed_sym.apps.bench.density_sweep``; see ``docs/density.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import flow_mixture as fm

__all__ = [
    "DensityDiagnostic",
    "residual_ratio",
    "sim_tv",
    "sim_limit",
    "RESIDUAL_RATIO_THRESHOLD",
    "SIM_TV_THRESHOLD",
]

#: ρ above this flags the run (calibration in docs/density.md).
RESIDUAL_RATIO_THRESHOLD = 2e-2
#: Soft-cell total variation against the simulation above this (and above twice its noise level)
#: flags the run.  Coarse-graining cannot increase a total variation, so a run above the
#: target TV (0.03) here is (up to the simulation's own error) above it everywhere.
SIM_TV_THRESHOLD = 0.03
#: Multiple of the noise level below which the soft-cell TV is not significant.
SIM_NOISE_FACTOR = 2.0


def sim_limit(noise, threshold=SIM_TV_THRESHOLD):
    """The soft-cell TV above which the simulation check fails: the threshold, or twice the
    statistic's noise level when that is larger."""
    return max(threshold, SIM_NOISE_FACTOR * noise)


def residual_parts(spec, params, X, terms):
    """R (N,) and the sum of squares of its four terms (N,) at the rows of X (values, no tape)."""
    c, e, D = terms
    _, s, H = fm.jets(spec, params, X, order=2)
    t1 = np.einsum("ni,ni->n", s, c)
    t2 = np.einsum("ni,nij,nj->n", s, D, s)
    t3 = np.einsum("nij,nij->n", D, H)
    R = t1 - t2 - t3 + e
    return R, t1 * t1 + t2 * t2 + t3 * t3 + e * e


def residual_ratio(spec, params, terms_of, X):
    """(ρ, E_q[R²], E_q[Σ terms²]) at points X drawn from q (see the module notes)."""
    R, T2 = residual_parts(spec, params, X, terms_of(X))
    J, S = float(np.mean(R * R)), float(np.mean(T2))
    return (J / S if S > 0 else float("inf")), J, S


def sim_tv(spec, params, start_spec, start_params, samples, n_chains, rng, n_q=100_000):
    """(TV, noise): soft-cell total variation between q and simulated samples, and its noise level.

    Cells are the responsibilities of the starting mixture.  The noise is the statistic's expected
    size when q equals the simulation's law: the TV between two halves of the chains, scaled by
    √((1/N + 1/n_q) / (4/N)) (the halves each hold half the samples).
    """
    from .init import soft_bins

    xi = fm.sample_latent(spec, params, n_q, rng)
    Xq = fm.inverse_flow(spec, params, xi)
    mq = soft_bins(start_spec, start_params, Xq).mean(0)
    phi = soft_bins(start_spec, start_params, samples)
    ms = phi.mean(0)
    tv = 0.5 * float(np.abs(mq - ms).sum())
    N = samples.shape[0]
    per_chain = N // n_chains
    half = (n_chains // 2) * per_chain
    tv_half = 0.5 * float(np.abs(phi[:half].mean(0) - phi[half:].mean(0)).sum())
    noise = tv_half * np.sqrt((1.0 / N + 1.0 / n_q) / (4.0 / N))
    return tv, float(noise)


@dataclass
class DensityDiagnostic:
    """Whether a :func:`density_from_dynamics` run converged, and the checks behind the verdict.

    Attributes
    ----------
    converged : bool
        The stopping rule fired (the residual ratio stopped improving at the final learning rate)
        and both checks passed.
    stop_reason : str
        ``"plateau"`` (stopping rule) or ``"n_steps"`` (the cap was reached first).
    steps : int
        Adam steps of the returned run; ``total_steps`` over all runs (restarts included).
    residual_ratio : float
        ρ of the returned density (8192 fresh points); passes when ≤ ``residual_threshold``.
    sim_tv, sim_noise : float or None
        Soft-cell total variation to the starting simulation and its noise level; passes when
        ≤ max(``sim_threshold``, 2·``sim_noise``).  None without a simulation.
    simulation : dict or None
        How the starting simulation was run (dt, steps, whether its mass had stopped drifting).
    runs : list of dict
        Per run (the first, then one per restart with doubled components): components, steps,
        stop reason, ρ, sim_tv.
    reasons : list of str
        Why the run is not converged (empty when it is).
    """

    converged: bool
    stop_reason: str
    steps: int
    total_steps: int
    residual_ratio: float
    residual_threshold: float
    sim_tv: float | None = None
    sim_noise: float | None = None
    sim_threshold: float = SIM_TV_THRESHOLD
    simulation: dict | None = None
    runs: list = field(default_factory=list)
    reasons: list = field(default_factory=list)

    @property
    def residual_ok(self):
        return bool(self.residual_ratio <= self.residual_threshold)

    @property
    def sim_limit(self):
        """The soft-cell TV above which the simulation check fails."""
        return None if self.sim_tv is None else sim_limit(self.sim_noise, self.sim_threshold)

    @property
    def sim_ok(self):
        if self.sim_tv is None:
            return True
        return bool(self.sim_tv <= self.sim_limit)

    def short(self):
        """One line: verdict, ρ and the simulation check."""
        txt = (
            f"converged={self.converged}, residual_ratio={self.residual_ratio:.2g} "
            f"({'≤' if self.residual_ok else '>'} {self.residual_threshold:g})"
        )
        if self.sim_tv is not None:
            txt += (
                f", sim_tv={self.sim_tv:.3f} ({'≤' if self.sim_ok else '>'} {self.sim_limit:.3f})"
            )
        return txt

    def __str__(self):
        lines = [
            f"density diagnostic: {self.short()}",
            f"  stopped by: {self.stop_reason} after {self.steps} steps "
            f"({self.total_steps} over {len(self.runs) or 1} "
            f"run{'s' if len(self.runs) > 1 else ''})",
        ]
        if self.simulation is not None:
            s = self.simulation
            lines.append(
                f"  starting simulation: {s['n_chains']} chains × {s['steps']} steps "
                f"of dt={s['dt']:.3g} "
                f"(time {s['time']:.3g}, slowest relaxation ≈ {s['relaxation_time']:.3g}), "
                f"{s['n_samples']} samples; mass drift {s['drift_tv']:.3f} ± {s['noise_tv']:.3f} "
                f"({'settled' if s['equilibrated'] else 'NOT settled'})"
            )
        for r in self.reasons:
            lines.append(f"  - {r}")
        return "\n".join(lines)
