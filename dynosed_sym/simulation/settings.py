"""Simulation settings as one value: :class:`Simulation`, whose fields map onto the keywords of
:func:`dynosed_sym.simulate` (for entry points that simulate on the user's behalf, such as
:func:`dynosed_sym.check_identifiability`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import arguments

__all__ = ["Simulation", "INDEPENDENT"]


@dataclass(frozen=True)
class Simulation:
    """How stationary snapshots are simulated (the keywords of :func:`dynosed_sym.simulate`).

    Parameters
    ----------
    dt : float
        Time step.
    burn_in : int
        Steps discarded at the start of every chain (``burn_in·dt`` time units to forget the
        start).
    thin : int
        Steps between the recorded states of one chain.
    n_chains : int, "independent" or None
        ``"independent"``: one chain per sample, so the N samples are N independent snapshots
        (cost ``N·(burn_in + thin)`` steps); an int: that many chains, each recording
        ``ceil(N / n_chains)`` states ``thin`` steps apart (correlated within a chain); None:
        :func:`~dynosed_sym.simulate`'s default ``min(N, 2048)``.
    x0 : array (d,) or (n_chains, d), optional
        Start states (default: inside the model's domain, see :func:`dynosed_sym.simulate`); a
        DataFrame, a labelled Series or a dict is kept and read by the state names there.
    """

    dt: float = 0.01
    burn_in: int = 5000
    thin: int = 10
    n_chains: int | str | None = None
    x0: object = field(default=None, compare=False)

    def __post_init__(self):
        arguments.number(self.dt, "Simulation.dt", positive=True)
        arguments.integer(self.burn_in, "Simulation.burn_in", minimum=0)
        arguments.integer(self.thin, "Simulation.thin", minimum=1)
        if not (self.n_chains is None or self.n_chains == "independent"):
            arguments.integer(self.n_chains, "Simulation.n_chains", minimum=1)
        labelled = arguments.labelled_values(self.x0)
        if isinstance(labelled, dict) or type(self.x0).__name__ == "DataFrame":
            # read by name when the model is known (simulate): a copy of the labels and values
            object.__setattr__(self, "x0", labelled.copy())
        elif self.x0 is not None:
            # refuses complex, boolean, text and dates (never cast); a copy, read-only
            x0 = np.array(arguments.float_array(self.x0, "Simulation.x0"), dtype=float)
            x0.setflags(write=False)
            object.__setattr__(self, "x0", x0)

    @property
    def independent(self) -> bool:
        """One chain per sample."""
        return self.n_chains == "independent"

    def chains(self, n_samples) -> int:
        """Number of chains for ``n_samples`` samples."""
        if self.independent:
            return int(n_samples)
        return min(int(n_samples), 2048) if self.n_chains is None else int(self.n_chains)

    def keywords(self, n_samples) -> dict:
        """The keywords of :func:`dynosed_sym.simulate` for ``n_samples`` samples."""
        return dict(
            dt=self.dt,
            burn_in=self.burn_in,
            thin=self.thin,
            n_chains=self.chains(n_samples),
            x0=self.x0,
        )

    def describe(self, n_samples) -> str:
        """``"20,000 independent snapshots (…)"`` or ``"20,000 samples from 2,048 chains (…)"``."""
        n, burn = int(n_samples), self.burn_in * self.dt
        C = self.chains(n)
        if C >= n:
            return (
                f"{n:,} independent simulated snapshots (one chain each, burn-in {burn:g} "
                "time units)"
            )
        per = -(-n // C)
        return (
            f"{n:,} simulated samples from {C:,} chains ({per} per chain, every "
            f"{self.thin * self.dt:g} time units after a burn-in of {burn:g}: correlated within a "
            "chain, so fewer than N independent snapshots)"
        )


#: Independent snapshots at the default step and burn-in (the simulation check's default).
INDEPENDENT = Simulation(n_chains="independent")
