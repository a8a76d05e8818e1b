"""Issue 22, second round: arguments checked before any work, start states never cast, the
simulator's memory estimated before allocating, data spread beyond double range named.

Oracles: the allocator (tracemalloc) for the memory estimate, SciPy's pdist on ordinary data
for the median length scale (bit for bit), the same simulation with float64 start states for
start states of other real dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist

import dynosed_sym as ds
from dynosed_sym.assembly.features import median_lengthscale
from dynosed_sym.assembly.memory import simulation_bytes
from dynosed_sym.simulation import Simulation

BAD_LEVELS = [1.5, 0, 1, -0.1, np.nan, 95]
LEVEL_MESSAGE = r"^Study\.level must be (between 0 and 1 \(exclusive\), e.g. 0.95|finite)"


def _refuse_to_sample(*args, **kwargs):
    raise AssertionError("the check sampled before checking level=")


# --------------------------------------------------------------------------- level= first
def _forced_ou():
    x, y, u, m1, m2 = sp.symbols("x y u m1 m2", real=True)
    return ds.SDEModel(
        [x, y],
        [m1, m2],
        [m1 * x + u, m2 * y],
        1,
        inputs=[u],
        nominal={"m1": -1.0, "m2": -2.0},
        name="rel2_forced_ou",
    )


@pytest.mark.parametrize("level", BAD_LEVELS)
def test_check_identifiability_checks_level_before_any_work(models, level):
    """A bad level is refused even when nothing would use it (simulate=False) and before a
    design check samples anything (the design path did not read level= at all): it is
    Study.level, checked when the Study is built, also from the flat keywords of earlier
    versions (which build the Study before anything else)."""
    with pytest.raises(ds.DataError, match=LEVEL_MESSAGE):
        ds.Study(level=level)
    with pytest.raises(ds.DataError, match=LEVEL_MESSAGE):
        ds.check_identifiability(models["ou2d"], study=ds.Study(level=level), simulate=False)
    with pytest.raises(ds.DataError, match=LEVEL_MESSAGE):
        ds.check_identifiability(
            _forced_ou(),
            experiment=ds.Experiment(inputs={"A": {"u": 0.0}, "B": {"u": 1.0}}),
            study=ds.Study(sampler=_refuse_to_sample, level=level),
        )


def test_check_identifiability_good_level_is_kept(models):
    check = ds.check_identifiability(models["ou2d"], study=ds.Study(level=0.9), simulate=False)
    assert check.level == 0.9


# --------------------------------------------------------------------------- x0 never cast
X0_REFUSALS = {
    "complex": (np.array([0.5 + 0.0j, -0.25 + 1e-3j]), r"^x0: holds complex numbers at row 1"),
    "complex_real": (np.array([0.5 + 0.0j, -0.25 + 0.0j]), r"^x0: holds complex numbers"),
    "bool": (np.array([True, False]), r"^x0: holds boolean values at row 0"),
    "text": (np.array(["0.5", "x"]), r"^x0: holds"),
    "datetime": (np.array(["2024-01-01", "2024-01-02"], dtype="M8[D]"), r"^x0: holds dates"),
}


@pytest.mark.parametrize("kind", sorted(X0_REFUSALS))
def test_x0_of_non_real_dtype_is_refused(models, kind):
    """(complex x0 lost its imaginary part with only a ComplexWarning; booleans became 0/1)"""
    model = models["ou2d"]
    x0, pattern = X0_REFUSALS[kind]
    with _no_complex_warning(), pytest.raises(ds.DataError, match=pattern):
        ds.simulate(model, model.nominal, 32, x0=x0, burn_in=10, thin=1)
    with pytest.raises(ds.DataError, match=pattern.replace("^x0", "^Simulation.x0")):
        Simulation(x0=x0)
    per_chain = np.stack([x0, x0])  # (n_chains, d): the message names the cell
    with pytest.raises(ds.DataError, match=r"^x0: holds"):
        ds.simulate(model, model.nominal, 32, n_chains=2, x0=per_chain, burn_in=10, thin=1)


class _no_complex_warning:
    """Fail if numpy's ComplexWarning (the old silent cast) is emitted inside the block."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error", np.exceptions.ComplexWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, object])
def test_x0_of_real_dtypes_is_its_value(models, dtype):
    """Real numbers of any width are their values: the same chains as float64 starts."""
    model = models["ou2d"]
    x0 = np.array([1.0, -2.0])
    kw = dict(n_chains=4, burn_in=50, thin=2, seed=3)
    ref = ds.simulate(model, model.nominal, 16, x0=x0, **kw)
    got = ds.simulate(model, model.nominal, 16, x0=x0.astype(dtype), **kw)
    assert np.array_equal(got, ref)
    assert Simulation(x0=x0.astype(dtype)).x0.dtype == np.float64


# --------------------------------------------------------------------------- simulate memory
def test_simulation_beyond_memory_is_refused_before_allocating(models):
    """n_samples=10**13 would need ~1 PB: refused at once, naming n_samples and n_chains."""
    model = models["ou2d"]
    with pytest.raises(
        ds.DataError,
        match=r"^simulate: n_samples=10,000,000,000,000 with n_chains=2,048 would need about "
        r"960 TB of memory \(4,882,812,500 records × 2,048 chains × d = 2 states, 6 copies of "
        r"8 bytes\), more than the .* available; lower n_samples",
    ):
        ds.simulate(model, model.nominal, 10**13)
    with pytest.raises(ds.DataError, match=r"n_chains=10,000,000,000,000 .*so lower n_chains"):
        ds.simulate(model, model.nominal, 10, n_chains=10**13)
    with pytest.raises(ds.DataError, match=r"^simulate: n_samples=10,000,000,000,000"):
        ds.check_identifiability(
            model,
            study=ds.Study(n_samples=10**13, simulation=Simulation(n_chains=2048, burn_in=10)),
        )


def test_simulation_memory_estimate_covers_the_measured_peak(models):
    """The estimate bounds the peak tracemalloc measures, within a factor 2.5."""
    from conftest import traced_peak

    model = models["ou2d"]  # (its N(0, I) starts are near its stationary law: no warning)
    ds.simulate(model, model.nominal, 64, burn_in=300, thin=1)  # (compiled)
    for n, C in [(60_000, 512), (60_000, 60_000), (90_000, 4096)]:
        peak = traced_peak(
            lambda n=n, C=C: ds.simulate(
                model, model.nominal, n, n_chains=C, burn_in=300, thin=1, seed=1
            )
        )
        estimate = simulation_bytes(model.d, n, C)
        assert peak <= estimate <= 2.5 * peak, (n, C, peak, estimate)


# --------------------------------------------------------------------------- median length scale
@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(2, 300),
    d=st.integers(1, 4),
    k=st.integers(-140, 140),
)
def test_median_lengthscale_is_pdist_bit_for_bit_in_range(seed, n, d, k):
    """On data whose squared distances stay in range the power-of-two scaling changes no bit:
    the oracle is SciPy's pdist on the data as given."""
    X = np.random.default_rng(seed).standard_normal((n, d)) * 10.0**k
    ref = float(np.median(pdist(X)))
    if not 1e-150 <= ref <= 2.0**511:
        return
    assert median_lengthscale(X, seed=seed) == ref


@settings(max_examples=40)
@given(seed=st.integers(0, 2**31), k=st.integers(-300, 300))
def test_median_lengthscale_is_scale_equivariant_or_names_the_scale(seed, k):
    """× 2^j is exact: the median scales with it; outside 1e-150 … 2⁵¹¹ the DataError names the
    spread (it said "are all samples identical?" once squared distances underflowed; above
    6.7e153 they overflow)."""
    X = np.random.default_rng(seed).standard_normal((200, 3))
    ref = median_lengthscale(X)
    j = int(round(k * np.log2(10.0)))
    scaled = ref * 2.0**j
    if 1e-150 <= scaled <= 2.0**511:
        assert median_lengthscale(np.ldexp(X, j)) == scaled
        return
    side = "underflow" if scaled < 1e-150 else "overflow"  # (ω² ~ 1/ℓ² overflows below)
    with pytest.raises(ds.DataError) as info:
        median_lengthscale(np.ldexp(X, j))
    msg = str(info.value)
    assert msg.startswith(f"X: the samples are spread over a scale of {scaled:.3g} "), msg
    assert f"squared distances would {side}" in msg and "rescale the state variables" in msg
    assert "identical" not in msg


def test_tiny_spread_in_a_fit_names_the_scale(models):
    model = models["ou2d"]
    X = np.random.default_rng(0).standard_normal((500, 2)) * 1e-200
    with pytest.raises(
        ds.DataError, match=r"^X: the samples are spread over a scale of 1.\d+e-200"
    ):
        ds.fit_global(model, X, features=ds.Features(n_features=32))
    # an explicit bandwidth: refused when the Features are built
    with pytest.raises(
        ds.DataError, match=r"^Features\.bandwidth=1e-200 is below 1e-150: .* overflow"
    ):
        ds.Features(n_features=32, bandwidth=1e-200)
    identical = np.ones((50, 2)) * 1e-200
    with pytest.raises(ds.DataError, match="same point"):
        ds.fit_global(model, identical, features=ds.Features(n_features=32))


def test_arguments_that_would_be_ignored_are_refused(models, tmp_path, monkeypatch):
    """Reliability round two (found by probing the API): ``order=`` on stationary samples,
    ``simulate="yes"`` and a non-path ``out_dir`` were accepted and ignored or misread; ``~`` in
    ``out_dir`` made a folder named "~" in the working directory."""
    m = models["ou2d_m12"]
    X = np.random.default_rng(0).standard_normal((300, 2))
    with pytest.raises(ds.DataError, match=r"^order='bogus' is the quadrature order of time"):
        ds.fit_global(m, X, order="bogus")
    with pytest.raises(ds.DataError, match=r"^simulate must be True or False, got 'yes'"):
        ds.check_identifiability(m, simulate="yes")
    with pytest.raises(ds.DataError, match=r"^Execution\.out_dir must be a folder path .* int"):
        ds.Execution(out_dir=123)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ds.Execution(out_dir="~/gen").out_dir == str(tmp_path / "gen")
