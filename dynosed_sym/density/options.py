"""What :func:`density_from_dynamics` learns and how: one small frozen dataclass per concept.

* :class:`Architecture` — the class of densities: mixture components, coupling layers and their
  width, the tail map;
* :class:`Training` — the optimiser: steps, collocation points, step sizes, cell anchor, stopping
  rule, restarts;
* :class:`Start` — where the starting simulation (or blob) is placed and how many chains it runs.

Each object is checked when it is built (a :class:`~dynosed_sym.errors.DataError` names the class
and the field), so a bad setting fails where it is written, before any work; variants come from
:func:`dataclasses.replace`::

    longer = dataclasses.replace(Training(), n_steps=6000)

How the call runs (progress bar, folder of generated kernels) stays in the keywords of
:mod:`dynosed_sym.options`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .. import arguments
from ..errors import DataError
from .flow_mixture import FlowMixtureSpec

__all__ = ["Architecture", "Training", "Start", "CHECK_EVERY", "MOVED_KEYWORDS"]

#: Steps between scorings of the averaged iterate by the residual ratio (the stopping rule's clock).
CHECK_EVERY = 50


@dataclass(frozen=True)
class Architecture:
    """The class of densities: a latent Gaussian mixture behind a near-identity flow.

    Parameters
    ----------
    n_components : int
        Latent mixture components K (default 16); a restart doubles them.
    n_layers : int
        Affine-coupling layers of the near-identity flow (default 2; 0: no couplings; a
        one-dimensional model never has any).
    n_hidden : int
        Hidden tanh units per coupling (default 8).
    tail : bool
        The radial and per-coordinate tail maps (default True): quartic tails possible, their
        strengths γ trained.  False: Gaussian-mixture tails.

    Examples
    --------
    >>> Architecture(n_components=32, n_layers=4)
    Architecture(n_components=32, n_layers=4, n_hidden=8, tail=True)
    """

    n_components: int = 16
    n_layers: int = 2
    n_hidden: int = 8
    tail: bool = True

    def __post_init__(self):
        arguments.check_field(self, "n_components", arguments.integer, minimum=1)
        arguments.check_field(self, "n_layers", arguments.integer, minimum=0)
        arguments.check_field(self, "n_hidden", arguments.integer, minimum=1)
        arguments.check_field(self, "tail", arguments.flag)

    def spec(self, d, center=None, whiten=None):
        """The :class:`FlowMixtureSpec` of this class in d dimensions (``center``/``whiten``: the
        frame of the tail maps)."""
        return FlowMixtureSpec(
            d,
            self.n_components,
            self.n_layers,
            self.n_hidden,
            tail=self.tail,
            center=center,
            whiten=whiten,
        )


@dataclass(frozen=True)
class Training:
    """The optimiser: Adam on the stationary Fokker–Planck residual, its stopping rule, restarts.

    Parameters
    ----------
    n_steps : int
        Most Adam steps per run (default 3000); training stops earlier when the stopping rule
        fires.
    n_points : int
        Collocation points per step, drawn afresh from the current density (default 512).
    learning_rate, final_learning_rate : float
        Adam step size at the start, after a 50-step warm-up (default 0.02), and the smallest one
        (default 1.25·10⁻³); the step size drops fourfold at each plateau of the residual ratio.
    anchor : float
        Scale-free strength of the pull of the density's mass in the soft cells of the starting
        mixture towards the simulation's (default 3·10⁻²).  It keeps the share of mass between
        metastable states, which the residual cannot see; 0 switches it off.
    tol, rtol, window : float, float, int
        Stopping rule on the residual ratio ρ of the averaged iterate, scored every
        :data:`CHECK_EVERY` steps: training stops when ρ ≤ ``tol`` (default 10⁻⁴) twice in a row,
        or when ρ has not improved by a factor ``1 − rtol`` (default 0.3) for ``window`` steps
        (default 200, at least 50) at the final step size.
    restarts : int
        Further runs when the stopping rule fired but a check failed, each with twice the
        components (default 1); the better run is returned.

    Examples
    --------
    >>> import dataclasses
    >>> longer = dataclasses.replace(Training(), n_steps=6000)
    >>> longer.n_steps, longer.learning_rate
    (6000, 0.02)
    >>> Training(window=10)
    Traceback (most recent call last):
    ...
    dynosed_sym.errors.DataError: Training.window must be at least 50, got 10
    """

    n_steps: int = 3000
    n_points: int = 512
    learning_rate: float = 0.02
    final_learning_rate: float = 1.25e-3
    anchor: float = 3e-2
    tol: float = 1e-4
    rtol: float = 0.3
    window: int = 200
    restarts: int = 1

    def __post_init__(self):
        check = arguments.check_field
        check(self, "n_steps", arguments.integer, minimum=1)
        check(self, "n_points", arguments.integer, minimum=2)
        rate = check(self, "learning_rate", arguments.number, positive=True)
        final = check(self, "final_learning_rate", arguments.number, positive=True)
        if final > rate:
            raise DataError(
                f"Training.final_learning_rate ({final}) must not exceed learning_rate ({rate})"
            )
        check(self, "anchor", arguments.number, nonnegative=True)
        check(self, "tol", arguments.number, nonnegative=True)
        rtol = check(self, "rtol", arguments.number, positive=True)
        if rtol >= 1:
            raise DataError(f"Training.rtol must be in (0, 1), got {rtol}")
        check(self, "window", arguments.integer, minimum=CHECK_EVERY)
        check(self, "restarts", arguments.integer, minimum=0)


@dataclass(frozen=True)
class Start:
    """Where training starts: the starting simulation's chains, or the blob of ``init="blob"``.

    Parameters
    ----------
    center : sequence of d floats, optional
        Centre of the simulation's start states and of the blob (default None: the origin).  A
        scalar is a one-dimensional centre; stored as a tuple of floats.
    scale : float
        Spread of those start states, ``center + scale·N(0, I)``, and of the blob (default 1).
    n_chains : int
        Chains of the starting simulation (default 20 000, at least 100): the share of mass
        between wells that the chains do not cross during the run is known to about
        ±0.5/√n_chains.

    Examples
    --------
    >>> Start(center=[1, 0], scale=0.5)
    Start(center=(1.0, 0.0), scale=0.5, n_chains=20000)
    """

    center: tuple | None = None
    scale: float = 1.0
    n_chains: int = 20000

    def __post_init__(self):
        if self.center is not None:
            object.__setattr__(self, "center", _center(self.center))
        arguments.check_field(self, "scale", arguments.number, positive=True)
        arguments.check_field(self, "n_chains", arguments.integer, minimum=100)

    def center_of(self, d):
        """The centre as a float array (d,): the origin for None; a DataError for another d."""
        if self.center is None:
            return np.zeros(d)
        if len(self.center) != d:
            raise DataError(
                f"Start.center: expected {d} value{'s' if d != 1 else ''} (one per state "
                f"variable), got {len(self.center)}: {list(self.center)}"
            )
        return np.array(self.center, dtype=float)


def _center(value):
    """A centre as a tuple of finite floats (a scalar, a vector or a (1, d) array)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"Start.center: cannot convert to a float array ({exc})") from None
    if arr.ndim > 2 or (arr.ndim == 2 and arr.shape[0] != 1):
        raise DataError(f"Start.center: expected d values, got shape {arr.shape}")
    arr = arr.reshape(-1)
    if not np.isfinite(arr).all():
        raise DataError(f"Start.center: contains NaN or inf ({arr.tolist()})")
    return tuple(float(v) for v in arr)


#: The flat keywords of the earlier signature → (option keyword, class, field).
MOVED_KEYWORDS = {
    **{f.name: ("architecture", Architecture, f.name) for f in fields(Architecture)},
    **{f.name: ("training", Training, f.name) for f in fields(Training)},
    "init_center": ("start", Start, "center"),
    "init_scale": ("start", Start, "scale"),
    "n_chains": ("start", Start, "n_chains"),
}
