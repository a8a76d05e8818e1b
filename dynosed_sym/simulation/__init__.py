"""Simulation: approximately stationary snapshots from the model's generated integrator.

:func:`simulate` runs independent chains (RK4 drift + Euler–Maruyama noise, a counter-based
random stream per chain), in this process or on Dask workers, bit for bit the same.
"""

from .simulate import (
    chain_keys,
    initial_states,
    plan_simulation,
    simulate,
    simulate_time_course,
    with_inputs,
)

__all__ = [
    "simulate",
    "simulate_time_course",
    "with_inputs",
    "plan_simulation",
    "chain_keys",
    "initial_states",
]
