# Two commands: `make demo` and `make test`. Both create .venv from the package index when missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Test processes (pytest-xdist; 0: one process).  Two take about two thirds of one's wall time on
# the 2-core CI machine: most of the suite is single-threaded (Numba compiles, SymPy, NumPy on small
# arrays).  Files are the unit of distribution (--dist loadfile): a file's tests share its
# fixtures' compiles.
TEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

.PHONY: demo test test-fast test-explore bench bench-peers golden docs clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,progress,dask]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m dynosed_sym.apps.demo

test: $(STAMP)
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

test-explore: $(STAMP)  ## the fast suite with fresh Hypothesis draws (make test's are the same every run)
	HYPOTHESIS_PROFILE=dynosed-explore $(PYTEST) -m "not slow"

bench: $(STAMP)
	$(PY) -m dynosed_sym.apps.bench

bench-peers: $(STAMP)  ## stadion vs ours on the peer's task (its own venv; ≈ 40 min; benchmarks/peers)
	nice -n 10 $(PY) benchmarks/peers/run.py

golden: $(STAMP)  ## regenerate generated/ for every model in models/, and tests/codegen/golden
	$(PY) -m dynosed_sym.codegen --prune --out generated models/*.py
	DYNOSED_UPDATE_GOLDEN=1 $(PY) -m pytest -q -p no:cacheprovider tests/codegen/test_structured.py -k golden

docs: $(STAMP)  ## guide pages + API reference into docs/_build/html (warnings are errors)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[docs]"
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis docs/_build
