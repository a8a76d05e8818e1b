"""Running GIL-releasing kernels (and NumPy products) on Python threads.

The package's parallel work that is not a Numba ``prange`` — the fill's ranges of feature blocks
(:mod:`.stein_fill`), the simulator's parts of chains
(:meth:`~dynosed_sym.codegen.loading.CompiledModel.run_chains`), the dense solve's parts of
blocks (:mod:`dynosed_sym.solve.grams`) — splits into independent parts whose results are
combined in a fixed order, so the result does not depend on the number of threads.  This is the
one loop that runs them.
"""

__all__ = ["map_ordered"]


def map_ordered(fn, items, workers):
    """``fn(x)`` for the items, yielded in their order; on ``workers`` threads when more than one
    (the calling thread otherwise, with no pool started)."""
    if workers <= 1:
        yield from (fn(x) for x in items)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, items)
