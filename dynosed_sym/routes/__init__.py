"""The two routes from data to a fit, and what they need: probes and score estimators.

* :mod:`.global_route` — :func:`fit_global`, the kernel Stein discrepancy with random features;
* :mod:`.local_route` — :func:`fit_local`, Fokker–Planck residuals at probes;
* :mod:`.probes` — choosing probe points and regions (:class:`Balls`);
* :mod:`.scores` — score estimators of the local route;
* :mod:`.result` — :class:`FitResult`.
"""

from .global_route import fit_global
from .local_route import fit_local, local_system
from .probes import Balls, choose_probes, restrict_to_balls
from .result import FitResult

__all__ = [
    "fit_global",
    "fit_local",
    "local_system",
    "FitResult",
    "Balls",
    "choose_probes",
    "restrict_to_balls",
]
