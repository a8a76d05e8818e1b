"""Simulation: approximately stationary snapshots from the model's generated integrator.

:func:`simulate` runs independent chains (RK4 drift + Euler–Maruyama noise, a counter-based
random stream per chain), in this process or on Dask workers, bit for bit the same; the chains
start inside the model's domain (:mod:`.starts`) and their output is checked for a stationary law
(:mod:`.stationarity`).  :class:`Simulation` holds simulate's settings as one value.
"""

from .settings import INDEPENDENT, Simulation
from .simulate import (
    chain_keys,
    initial_states,
    plan_simulation,
    simulate,
    simulate_time_course,
    with_inputs,
)
from .stationarity import StationarityCheck, check_stationarity

__all__ = [
    "simulate",
    "simulate_time_course",
    "with_inputs",
    "plan_simulation",
    "chain_keys",
    "initial_states",
    "Simulation",
    "INDEPENDENT",
    "StationarityCheck",
    "check_stationarity",
]
