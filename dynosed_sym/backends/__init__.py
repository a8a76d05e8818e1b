"""Execution backends: where the fill and the simulator run when not in this process.

* :mod:`.dask` — the global fill over data chunks and the simulator's chains on Dask workers
  (optional: ``pip install 'dynosed_sym[dask]'``; Dask is imported only when used).
"""
