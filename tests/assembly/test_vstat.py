"""The random-feature loss ‖Aθ − b‖² converges to the exact O(N²) kernel Stein V-statistic.

The V-statistic is differentiated by SymPy from the Gaussian kernel (reference.stein_vstat),
an independent route to the quantity the compiled fill approximates with m random features.
"""

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import assemble_global
from dynosed_sym.reference import stein_vstat


@pytest.mark.parametrize("scale", [(1.0, 1.0, 1.0), (1.3, 0.9, 1.5)])
def test_rff_loss_converges_to_vstat(scale):
    model = ds.load_model("models/lorenz.py")
    cm = ds.compile_model(model)
    X = ds.simulate(model, model.nominal, 300, seed=3)
    theta = model.nominal * np.array(scale)
    ell = 8.0
    exact = stein_vstat(model, X, theta, ell)
    losses = []
    for s in range(6):
        A, b, *_ = assemble_global(cm, [X], draw_features(model.d, 20000, ell, seed=s))
        losses.append(np.sum((A @ theta - b) ** 2))
    mean, se = np.mean(losses), np.std(losses, ddof=1) / np.sqrt(len(losses))
    # Monte Carlo error of the features only: the mean over seeds is within 4 standard errors
    assert abs(mean - exact) < 4 * se + 1e-12
    assert abs(mean - exact) / exact < 0.02
