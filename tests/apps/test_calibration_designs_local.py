"""The held-out calibration of local fits on designs (``--only local_designs``): its families
declare proper designs, and tiny cells run end to end (seconds; the committed run is
benchmarks/calibration_sweep_local_designs.txt)."""

from __future__ import annotations

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.apps.bench import calibration_designs_local as ld
from dynosed_sym.apps.bench.calibration_data import data_seed, load_dataset
from dynosed_sym.apps.bench.calibration_metrics import cell_metrics
from dynosed_sym.apps.bench.calibration_sweep import RIDGE, read_records
from dynosed_sym.apps.bench.common import LONG_SECTIONS, SECTIONS


@pytest.mark.parametrize("name", list(ld.LOCAL_DESIGNS))
def test_families_declare_a_design(name):
    fam = ld.LOCAL_DESIGNS[name]()
    assert fam.name == name and fam.truth.shape == (fam.model.n,)
    assert fam.sizes == (500, 5000)
    if fam.course is not None:  # a time course: ≥ 3 snapshots (one interior), no inputs
        assert len(fam.course["times"]) >= 3 and not fam.envs
        X = fam.course["exact"](0.3, 10, np.random.default_rng(0))
        assert X.shape == (10, fam.model.d)
        return
    inputs = {str(u) for u in fam.model.inputs}
    assert len(fam.envs) >= 2 and set(fam.envs) == set(fam.protocols)
    for env, u in fam.envs.items():
        assert set(u) == inputs, (env, u)
        p = fam.protocols[env]
        assert p.burn_in * p.dt >= 10 * p.relaxation, (env, p.describe())
        assert (p.exact is not None) == fam.exact
    if fam.exact:  # exact draws of the stationary law: E[Aφ] = 0 for φ = x, x² (1-D)
        for env, u in fam.envs.items():
            X = fam.protocols[env].exact(400_000, np.random.default_rng(1))[:, 0]
            f, D = _at_truth(fam, u, X)
            for g in (f, 2 * X * f + 2 * D):
                assert abs(g.mean()) < 5 * g.std() / np.sqrt(X.size), (env, g.mean())


def _at_truth(fam, u, X):
    """(f, D) of a 1-D family at the truth in the environment with inputs u, at X."""
    import sympy as sp

    m = fam.model
    subs = dict(zip(m.params, fam.truth)) | {s: u[str(s)] for s in m.inputs}
    x = m.state[0]
    f, D = (sp.lambdify(x, e.subs(subs), "numpy") for e in (m.drift[0], m.D[0, 0]))
    return np.broadcast_to(f(X), X.shape), np.broadcast_to(D(X), X.shape)


def test_the_section_is_on_the_command_line_and_not_in_the_default_run():
    assert "local_designs" in SECTIONS and "local_designs" in LONG_SECTIONS


def test_tiny_cells_end_to_end(tmp_path):
    """input_cubic (three input environments), 2 sets of 300 samples per environment from
    ds.simulate and from the exact law; every record is the fit a user would get on the same
    data (drawn again here from the documented seeds), and the table names every cell."""
    opts = ld.DesignSweep(
        families=["input_cubic"],
        n_sets=2,
        sizes=(300,),
        cache_dir=str(tmp_path),
        table_path=str(tmp_path / "t.txt"),
        records_path=str(tmp_path / "r.json.gz"),
        quiet=True,
    )
    payload = ld.run_local_designs(opts)
    recs = payload["records"]
    assert len(recs) == 2 * 2 * 2  # sources × sets × columns
    assert all(r["error"] is None for r in recs), [r["error"] for r in recs]
    fam = ld.input_cubic()
    for k in range(2):
        data, probes = {}, {}
        for env in fam.envs:
            X = np.random.default_rng(data_seed(f"input_cubic.{env}", k))
            X = fam.protocols[env].exact(300, X)  # exact draws, seeded as documented
            data[env] = X
            probes[env] = ds.choose_probes(X, 12, method="kmeans", seed=k)
        for col, kw in (("default", {}), ("ridge", RIDGE)):
            fit = ds.fit_local(fam.model, data, probes, inputs=fam.envs, solver=ds.Solver(**kw))
            (rec,) = [r for r in recs if (r["set"], r["column"], r["source"]) == (k, col, "exact")]
            assert rec["theta"] == fit.theta.tolist()
            assert rec["verdict"] == fit.report.verdict
            ci = fit.conf_int()
            assert rec["finite"] == np.isfinite(ci).all(axis=1).tolist()
    # the simulated sets are the cache's ds.simulate draws in every environment
    env = "u2"
    X = load_dataset(
        f"input_cubic.{env}",
        fam.model.with_inputs(fam.envs[env]),
        fam.truth,
        fam.protocols[env],
        1,
        300,
        str(tmp_path),
    )
    assert X.shape == (300, 1) and np.isfinite(X).all()
    cell = [c for c in payload["cells"] if c["cell"] == ["input_cubic", "exact", 300, "local"]]
    mine = [r for r in recs if r["source"] == "exact" and r["column"] == "default"]
    assert cell[0]["metrics"]["default"] == cell_metrics(mine, fam.truth)
    text = (tmp_path / "t.txt").read_text()
    assert "input_cubic   simulate     300 local" in text and "verdicts per cell" in text
    assert read_records(str(tmp_path / "r.json.gz"))["records"] == recs


def test_a_time_course_cell_runs(tmp_path):
    opts = ld.DesignSweep(
        families=["ou_relaxation"],
        n_sets=1,
        sizes=(300,),
        sources=("exact",),
        cache_dir=str(tmp_path),
        table_path=str(tmp_path / "t.txt"),
        records_path=str(tmp_path / "r.json.gz"),
        quiet=True,
    )
    recs = ld.run_local_designs(opts)["records"]
    assert [(r["source"], r["column"]) for r in recs] == [("exact", "default"), ("exact", "ridge")]
    assert all(r["error"] is None and len(r["theta"]) == 4 for r in recs)
