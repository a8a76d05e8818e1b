"""Pictures: the demo's figure functions on small data, the plotting primitives, and the docs.

The figures committed under docs/images/ come from ``python -m dynosed_sym.apps.demo --figures-only
--figures docs/images``; here the same functions run on small data sets (the full demo would take
minutes), and the documentation (README.md or a page in docs/) must embed every committed image.
"""

from __future__ import annotations

import pathlib
import re
import struct

import numpy as np
import pytest

import dynosed_sym as ds

pytest.importorskip("matplotlib")

from dynosed_sym.apps import plotting  # noqa: E402
from dynosed_sym.apps.demo import figures as demo  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
IMAGES = ROOT / "docs" / "images"


def png_size(path):
    """(width, height) from a PNG header; fails for anything that is not a PNG."""
    head = pathlib.Path(path).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def _assert_figure(path, min_px=300):
    path = pathlib.Path(path)
    assert path.is_file() and path.stat().st_size > 10_000, path
    w, h = png_size(path)
    assert w >= min_px and h >= min_px // 2


def test_demo_figures_on_small_data(tmp_path):
    paths = [
        demo.figure_ou(tmp_path, n_samples=2000),
        demo.figure_grn(tmp_path, n_samples=2000, burn_in=1500, n_cloud=1000),
        demo.figure_lorenz_local_global(
            tmp_path,
            n_dense=500_000,
            n_draws=2,
            temperatures=(10, 49),
            sizes=(300, 600),
            n_global_draws=2,
            n_features=128,
        ),
    ]
    assert sorted(pathlib.Path(p).name for p in paths) == sorted(demo.PAPER_FIGURES)
    for p in paths:
        _assert_figure(p)


def test_plotting_primitives(tmp_path, models, ou_samples):
    m = models["ou2d"]
    X = ou_samples(m.nominal.reshape(2, 2), 1.0, 2000, 0)
    fit = ds.fit_global(m, X, features=ds.Features(n_features=128, seed=0))
    figs = {
        "free.png": plotting.plot_freeness(fit),
        "free_matrix.png": plotting.plot_freeness(
            fit.report, shape=(2, 2), row_labels=["x", "y"], col_labels=["x", "y"]
        ),
        "matrices.png": plotting.plot_parameter_matrices(m.nominal, fit, (2, 2)),
        "estimates.png": plotting.plot_estimates(
            [100, 1000],
            np.stack([np.tile(fit.theta, (3, 1))] * 2),
            truth=m.nominal,
            param_names=m.param_names,
        ),
        "clouds.png": plotting.plot_steady_state(X, X[::-1], state_names=m.state_names),
        "spectrum.png": plotting.plot_singular_values(fit),
    }
    for name, fig in figs.items():
        _assert_figure(plotting.save_figure(fig, tmp_path / name), min_px=150)
    # the spectrum marks the all-free OU's one unresolved direction
    ax = figs["spectrum.png"].axes[0]
    assert ax.get_title() == "rank 3 of 4"
    open_markers = [c for c in ax.collections if c.get_label() == "unresolved"]
    assert open_markers[0].get_offsets().shape[0] == 1
    with pytest.raises(ds.DynosedError, match="x has shape"):
        plotting.plot_estimates([1, 2, 3], np.zeros((2, 4)))


def test_committed_images_are_small_pngs_embedded_in_the_docs():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    committed = sorted(p.name for p in IMAGES.glob("*.png"))
    assert committed == sorted(demo.FIGURES)
    for name in committed:
        path = IMAGES / name
        _assert_figure(path)
        assert path.stat().st_size < 200_000, f"{name}: {path.stat().st_size} bytes"
        assert re.search(rf"!\[[^\]]*\]\((docs/)?images/{re.escape(name)}\)", text), (
            f"no page of README.md or docs/ embeds docs/images/{name}"
        )
