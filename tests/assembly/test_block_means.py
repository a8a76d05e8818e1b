"""Per-block means kept as the sums they come from (issue 20, memory at scale): BlockMeans
against the dense (B, m, n) array, the contraction against np.add.at over the table, a fit that
reads them lazily, and the memory an assembly then takes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import points_for, traced_peak

import dynosed_sym as ds
from dynosed_sym.apps.bench.network_model import network_model
from dynosed_sym.assembly import stein
from dynosed_sym.assembly.contraction import BlockMeans, contraction_of
from dynosed_sym.assembly.facesplit import face_split_of
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.data.blocks import block_edges


@pytest.fixture(scope="module")
def network12(tmp_path_factory):
    """d = 12 network (its 144 weights a matrix block), samples from its simulator."""
    model, truth = network_model(12, 0)
    cm = ds.compile_model(model, str(tmp_path_factory.mktemp("net12")))
    X = ds.simulate(
        model,
        truth,
        3000,
        burn_in=3000,  # 30 time units: settled (400 steps left the means still moving)
        execution=ds.Execution(out_dir=str(tmp_path_factory.mktemp("s"))),
    )
    return model, truth, cm, X


def _add_at(cm, feats, P_s, count):
    """A by the table, term by term with np.add.at (the contraction before matrix blocks)."""
    import math

    P_s = feats.unblock(P_s)
    A = np.zeros((feats.m, cm.model.n))
    e, j, k = cm.a_terms.T
    np.add.at(A.T, k, (cm.a_coef[None, :] * feats.omega[:, j] * P_s[e].T).T)
    A *= -math.sqrt(2.0 / feats.m) / count
    return A


@pytest.mark.parametrize("which", ["grn", "network"])
def test_contraction_is_the_table_bit_for_bit(which, compiled, models, network12):
    """Columns with one table entry (every column of a matrix block) and the GRN's table: the
    same arithmetic as np.add.at over the expanded table."""
    if which == "grn":
        cm, X = compiled["grn_bcell"], np.random.default_rng(0).uniform(0, 2, (500, 7))
    else:
        _, _, cm, X = network12
        assert cm.a_blocks
    feats = draw_features(cm.model.d, 200, 1.3, seed=1)
    P_s, P_c = stein.block_sums(cm, X, feats)
    A, _ = stein.contract(cm, feats, P_s, P_c, X.shape[0])
    np.testing.assert_array_equal(A, _add_at(cm, feats, P_s, X.shape[0]))


def test_block_means_are_the_dense_blocks(network12, monkeypatch):
    model, truth, cm, X = network12
    feats = draw_features(model.d, 160, 1.0, seed=2)
    edges = block_edges(X.shape[0], 8)
    dense = stein.assemble_array(cm, X, edges, feats)
    # the plain array (its products NumPy's, not read from the network's factors)
    dense = dense._replace(A_blocks=np.asarray(dense.A_blocks))
    monkeypatch.setattr(stein, "DENSE_BLOCKS_BYTES", 0)
    lazy = stein.assemble_array(cm, X, edges, feats)
    Ab = lazy.A_blocks
    assert isinstance(Ab, BlockMeans) and Ab.shape == dense.A_blocks.shape and len(Ab) == 8
    assert Ab.stored_nbytes < Ab.nbytes / 4
    np.testing.assert_array_equal(lazy.A, dense.A)
    np.testing.assert_array_equal(lazy.b_blocks, dense.b_blocks)
    np.testing.assert_array_equal(np.asarray(Ab), dense.A_blocks)
    np.testing.assert_array_equal(Ab[3], dense.A_blocks[3])
    np.testing.assert_array_equal(Ab[[1, 5]], dense.A_blocks[[1, 5]])
    rng = np.random.default_rng(3)
    theta, Y, w = rng.standard_normal(model.n), rng.standard_normal((8, 160)), rng.uniform(size=8)
    tol = 1e-12 * np.abs(dense.A_blocks).max()
    np.testing.assert_array_equal(Ab @ theta, dense.A_blocks @ theta)
    assert np.abs(Ab.matvec(theta) - dense.A_blocks @ theta).max() <= tol * np.abs(theta).sum()
    V = rng.standard_normal((model.n, 3))
    np.testing.assert_array_equal(Ab @ V, dense.A_blocks @ V)
    ATY = np.einsum("bmn,bm->bn", dense.A_blocks, Y)
    assert np.abs(Ab.rmatvec(Y) - ATY).max() <= 1e-12 * np.abs(ATY).max()
    np.testing.assert_allclose(Ab.weighted_sum(w), np.tensordot(w, dense.A_blocks, 1), rtol=1e-12)
    dA = dense.A_blocks - dense.A[None]
    S = np.einsum("b,bmn,bmk->nk", w, dA, dA)
    assert np.abs(Ab.deviation_gram(dense.A, w) - S).max() <= 1e-12 * np.abs(S).max()
    np.testing.assert_array_equal(np.asarray(Ab / 4.0), dense.A_blocks / 4.0)


def test_a_fit_with_lazy_blocks_is_the_dense_fit(models, monkeypatch):
    """fit_global with BlockMeans (the solve reads them as an array) gives the same θ̂, standard
    errors and p-value as with the dense blocks, bit for bit."""
    model = models["ou2d"]
    X = ds.simulate(model, model.nominal, 4000, seed=1, burn_in=300)
    dense = ds.fit_global(model, X, features=ds.Features(n_features=256))
    monkeypatch.setattr(stein, "DENSE_BLOCKS_BYTES", 0)
    lazy = ds.fit_global(model, X, features=ds.Features(n_features=256))
    np.testing.assert_array_equal(lazy.theta, dense.theta)
    np.testing.assert_array_equal(lazy.report.std_errors, dense.report.std_errors)
    assert lazy.report.p_value == dense.report.p_value


def test_lazy_assembly_memory_is_the_sums_not_the_blocks(network12, monkeypatch):
    """Above DENSE_BLOCKS_BYTES the assembly never holds the (B, m, n) blocks: its peak is the
    fill's sums (K = 25 factors here against n = 144 columns: the gap grows with n/K, 50 for
    the d = 100 network)."""
    model, _, cm, X = network12
    feats = draw_features(model.d, 512, 1.0, seed=4)
    edges = block_edges(X.shape[0], 32)
    contraction_of(cm)
    monkeypatch.setattr(stein, "DENSE_BLOCKS_BYTES", 0)
    dense_bytes = 32 * 512 * model.n * 8
    peak = traced_peak(lambda: stein.assemble_array(cm, X, edges, feats))
    assert peak < dense_bytes / 2, (peak, dense_bytes)


@pytest.mark.parametrize("case", ["network12", "grn_bcell", "lorenz"])
def test_the_estimate_counts_the_sums_the_fill_keeps(case, network12, models):
    """stein_sums_rows (the memory estimate's rows per block) against the sums a lazy assembly
    actually stores (BlockMeans.stored_nbytes: B blocks of (rows, m) doubles)."""
    from dynosed_sym.assembly import memory

    if case == "network12":
        model, _, cm, X = network12
    else:
        model = models[case]
        cm = ds.compile_model(model)
        X = points_for(model, 2000, seed=2)  # any points: only the sums' shape is read
    feats = draw_features(model.d, 64, 1.0, seed=4)
    edges = block_edges(X.shape[0], 8)
    P_s, P_c = stein.block_sums(cm, X, feats, edges)  # (G, feature blocks, K, FEATURE_BLOCK)
    assert P_s.shape[0] == 8
    assert memory.stein_sums_rows(model) == P_s.shape[2] + P_c.shape[2]


def test_lazy_fit_memory_is_within_the_estimate(network12, monkeypatch):
    """Beyond DENSE_BLOCKS_BYTES a whole fit (assembly, streamed solve, report) stays within
    assembly_bytes' lazy estimate, which is well below the dense one (the allocator is the
    oracle; chunks of two blocks here, the streamed products' own size in the estimate)."""
    import os

    from conftest import traced_peak

    from dynosed_sym.assembly import memory
    from dynosed_sym.solve import blockops

    model, _, cm, X = network12
    m, B = 512, 32
    chunk = 2 * m * model.n * 8
    monkeypatch.setattr(stein, "DENSE_BLOCKS_BYTES", 0)
    monkeypatch.setattr(memory, "DENSE_BLOCKS_BYTES", 0)
    monkeypatch.setattr(memory, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(blockops, "CHUNK_BYTES", chunk)
    ex = ds.Execution(out_dir=os.path.dirname(cm.path), n_blocks=B)
    feats = ds.Features(n_features=m)
    fit = ds.fit_global(model, X, features=feats, execution=ex)  # warm
    assert fit.info["timings"]
    peak = traced_peak(lambda: ds.fit_global(model, X, features=feats, execution=ex))
    estimate = memory.assembly_bytes(model.d, model.n, m, B, memory.stein_sums_rows(model))
    assert peak <= estimate <= 2.5 * peak, (peak, estimate)
    assert estimate < 8 * memory.ASSEMBLY_COPIES * B * m * (model.n + 1)


def test_contraction_into_a_given_block_is_the_same_bit_for_bit(network12):
    """Contraction.A(..., out=) — how the dense assembly fills its stacked per-block means —
    writes the numbers of a fresh contraction, whatever the buffer held before (NaN here)."""
    model, _, cm, X = network12
    feats = draw_features(model.d, 64, 1.0, seed=5)
    plan = contraction_of(cm)
    P_s, _ = stein.block_sums(cm, X[:500], feats)
    P_s = feats.unblock(P_s)
    fresh = plan.A(feats.omega, P_s, 0.37)
    buf = np.full((3,) + fresh.shape, np.nan)
    got = plan.A(feats.omega, P_s, 0.37, out=buf[1])
    assert np.shares_memory(got, buf)
    np.testing.assert_array_equal(buf[1], fresh)
    assert np.isnan(buf[0]).all() and np.isnan(buf[2]).all()


@pytest.mark.parametrize("which", ["network", "grn"])
def test_dense_block_means_carry_their_factors(which, compiled, network12):
    """A model whose every parameter is in one matrix block (the network) gets dense block means
    with their face-splitting factors, which reproduce every block to rounding; the GRN (table
    columns) gets a plain array.  A fit on the network's factors equals the dense Grams' fit."""
    if which == "grn":
        cm, X = compiled["grn_bcell"], np.random.default_rng(0).uniform(0, 2, (500, 7))
    else:
        _, _, cm, X = network12
    feats = draw_features(cm.model.d, 200, 1.3, seed=1)
    system = stein.assemble_array(cm, X, block_edges(X.shape[0], 8), feats)
    fs = face_split_of(system.A_blocks)
    if which == "grn":
        assert fs is None and type(system.A_blocks) is np.ndarray
        return
    assert fs.shape == system.A_blocks.shape
    for b in range(len(system.A_blocks)):
        dense = np.asarray(system.A_blocks[b])
        np.testing.assert_allclose(fs.block(b), dense, rtol=1e-14, atol=1e-15 * np.abs(dense).max())


@pytest.mark.parametrize("which", ["network12", "decay_net"])
def test_a_network_fit_on_the_factors_is_the_dense_fit(which, request, monkeypatch):
    """Estimates, intervals and standard errors of the d = 12 network (one matrix block) and of
    the 8-gene network with decay and basal rates (an embedded product) to rounding, with the
    factors and with the dense Grams (the free parameters' reported noise aside)."""
    from dynosed_sym.solve import directions as directions_module
    from dynosed_sym.solve.facesplit import FaceSplitGrams

    model, _, _, X = request.getfixturevalue(which)
    used = []
    compute = FaceSplitGrams.compute.__func__
    monkeypatch.setattr(
        FaceSplitGrams,
        "compute",
        classmethod(lambda cls, *a, **k: used.append(1) or compute(cls, *a, **k)),
    )
    fast = ds.fit_global(model, X, features=ds.Features(n_features=256, seed=3))
    assert used, "the network's fit did not use its factors"
    monkeypatch.setattr(directions_module, "face_split_of", lambda blocks: None)
    slow = ds.fit_global(model, X, features=ds.Features(n_features=256, seed=3))
    np.testing.assert_allclose(fast.theta, slow.theta, rtol=1e-9, atol=1e-12)
    ci_f, ci_s = fast.conf_int(), slow.conf_int()
    np.testing.assert_array_equal(np.isfinite(ci_f), np.isfinite(ci_s))
    finite = np.isfinite(ci_s)
    np.testing.assert_allclose(ci_f[finite], ci_s[finite], rtol=1e-9)
    assert fast.report.rank == slow.report.rank


@pytest.fixture(scope="module")
def decay_net(tmp_path_factory):
    model, truth = network_model(8, 1, rates=True)  # W, decay and basal rates: n = 80
    ex = ds.Execution(out_dir=str(tmp_path_factory.mktemp("decay")))
    X = ds.simulate(model, truth, 3000, burn_in=3000, execution=ex)  # 30 time units
    return model, truth, ds.compile_model(model, ex.out_dir), X


def test_terms_beside_a_block_are_an_embedded_product(decay_net):
    """W, the decay rates and the basal rates (80 columns in a block and 16 table terms) give
    block means ``Ã_b E`` over the 8 rows × 17 features that occur, reproducing every dense block
    to rounding; E holds each column's coefficient once."""
    model, _, cm, X = decay_net
    feats = draw_features(model.d, 200, 1.3, seed=1)
    system = stein.assemble_array(cm, X, block_edges(X.shape[0], 8), feats)
    fs = face_split_of(system.A_blocks)
    assert fs is not None and fs.embed is not None
    assert fs.a.shape[1] * fs.P.shape[1] == 8 * 17 and fs.shape == system.A_blocks.shape
    assert fs.embed.nnz == model.n
    for b in range(len(system.A_blocks)):
        dense = np.asarray(system.A_blocks[b])
        np.testing.assert_allclose(fs.block(b), dense, rtol=1e-13, atol=1e-14 * np.abs(dense).max())


def _plan(n, blocks=(), terms=()):
    """A stand-in Contraction: table terms (feature, state, column, coef) and blocks."""
    from types import SimpleNamespace

    t = np.array(terms, dtype=float).reshape(-1, 4)
    e, j, k = (t[:, i].astype(np.int64) for i in range(3))
    empty = (np.zeros(0, np.int64),) * 3 + (np.zeros(0),)
    blocks = [(f, np.array(r), np.array(c, float), np.array(ft)) for f, r, c, ft in blocks]
    return SimpleNamespace(n=n, first=(e, j, k, t[:, 3]), later=empty, blocks=blocks)


def test_which_contractions_are_face_split():
    """One block holding every column: the block's own form (no embedding); a block beside table
    terms, n ≥ MIN_EMBEDDED_N, at least MIN_EMBEDDED_ROWS rows and rows × features ≤ 2n:
    embedded; too few columns or rows, too many rows × features (one parameter per state and
    feature), or a column without a term: None."""
    from dynosed_sym.assembly import facesplit as afs

    block = (0, list(range(8)), [1.0] * 8, list(range(8)))
    one = afs.face_split_columns(_plan(64, [block]))
    assert one is not None and one.embed is None and one.cs is not None
    terms = [(8, j, 64 + j, -1.0) for j in range(8)] + [(9, j, 72 + j, 1.0) for j in range(8)]
    both = afs.face_split_columns(_plan(80, [block], terms))
    assert both is not None and both.embed.shape == (8 * 10, 80) and both.cs is None
    np.testing.assert_array_equal(both.rows, np.arange(8))
    np.testing.assert_array_equal(both.feats, np.arange(10))
    small = [(j, j, j, 1.0) for j in range(40)]
    assert afs.face_split_columns(_plan(40, terms=small)) is None  # n < MIN_EMBEDDED_N
    diag = [(j, j, j, 1.0) for j in range(70)]  # 70 rows × 70 features for 70 columns
    assert afs.face_split_columns(_plan(70, terms=diag)) is None
    few = (0, list(range(4)), [1.0] * 4, list(range(20)))  # 4 rows: nothing to save
    assert afs.face_split_columns(_plan(81, [few], [(0, 0, 80, 1.0)])) is None
    assert afs.face_split_columns(_plan(81, [block], terms)) is None  # column 80 has no term
