"""Applications built on the library: the command line (:mod:`.cli`), the demo (:mod:`.demo`),
the benchmarks (:mod:`.bench`) and the figures (:mod:`.plotting`, matplotlib optional).

Nothing in the library imports from here.
"""
