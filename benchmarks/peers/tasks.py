"""The peer benchmark's tasks: the shared data files, the models of our side and the metrics.

Interventional linear tasks (drift ``W x + b + shift_e``, W[j, k] the effect of x_k on x_j,
diagonal −1 known to both methods, D diagonal and constant) with exact stationary Gaussian samples:
mean ``−W⁻¹(b + shift_e)``, covariance Σ from ``WΣ + ΣWᵀ + 2D = 0``.

* ``cycle5`` — the task of issue 23 (stadion's README example made exact): d = 5, the cycle
  x0→x1 0.8, x1→x2 −0.6, x2→x3 0.5, x3→x4 0.7, x4→x0 −0.4, b = 0, D = 0.5·I; environments
  observational, shift +3 on x1, shift −5 on x3.
* ``dag6`` — a variant chosen without looking at any fit: d = 6, seven edges (a feed-forward
  part and one feedback loop x5→x1), b ≠ 0, D unequal across variables; four environments,
  one of them with two targets.

Lorenz (the earlier single-snapshot comparison): ``models/lorenz.py`` (σ = 10, ρ = 28, β = 8/3,
D = 0.3·I), N = 300 and 2000 snapshots from ``ds.simulate``.

Only NumPy/SciPy here and in the data files: the peer's runner reads the ``.npz`` files without
importing this repository.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIR = os.path.join(HERE, "data")

SIZES = (1000, 5000)
LORENZ_SIZES = (300, 2000)
N_SETS = 5


@dataclass(frozen=True)
class LinearTask:
    """A linear SDE with shift interventions on known targets (see the module docstring)."""

    name: str
    edges: tuple  # (j, k, W[j, k]): x_k → x_j
    d: int
    b: tuple
    D: tuple  # diagonal of D
    shifts: dict = field(default_factory=dict)  # {env: {variable index: shift}}
    seed: int = 0
    note: str = ""

    @property
    def W(self):
        W = -np.eye(self.d)
        for j, k, v in self.edges:
            W[j, k] = v
        return W

    @property
    def envs(self):
        return list(self.shifts)

    def shift_vector(self, env):
        s = np.zeros(self.d)
        for j, v in self.shifts[env].items():
            s[j] = v
        return s

    def targets(self, env):
        """0/1 mask of the intervened variables of ``env``."""
        return (np.abs(self.shift_vector(env)) > 0).astype(np.int32)

    def covariance(self):
        S = scipy.linalg.solve_continuous_lyapunov(self.W, -2.0 * np.diag(self.D))
        return 0.5 * (S + S.T)

    def mean(self, env):
        return -np.linalg.solve(self.W, np.asarray(self.b) + self.shift_vector(env))

    def edge_mask(self):
        """(d, d) bool: true edges, off-diagonal only."""
        m = np.zeros((self.d, self.d), dtype=bool)
        for j, k, _ in self.edges:
            m[j, k] = True
        return m


TASKS = {
    "cycle5": LinearTask(
        name="cycle5",
        d=5,
        edges=((1, 0, 0.8), (2, 1, -0.6), (3, 2, 0.5), (4, 3, 0.7), (0, 4, -0.4)),
        b=(0.0,) * 5,
        D=(0.5,) * 5,
        shifts={"obs": {}, "shift_x1": {1: 3.0}, "shift_x3": {3: -5.0}},
        seed=23_000,
        note="issue 23: cycle of five, shifts +3 on x1 and −5 on x3",
    ),
    "dag6": LinearTask(
        name="dag6",
        d=6,
        edges=(
            (2, 0, 0.9),
            (2, 1, -0.7),
            (3, 2, 0.6),
            (4, 0, -0.5),
            (5, 3, -0.8),
            (5, 4, 0.6),
            (1, 5, 0.5),
        ),
        b=(0.5, -0.3, 0.0, 0.2, 0.0, -0.4),
        D=(0.3, 0.5, 0.4, 0.6, 0.5, 0.3),
        shifts={
            "obs": {},
            "shift_x0": {0: 2.0},
            "shift_x4": {4: -3.0},
            "shift_x2x5": {2: 2.5, 5: -1.5},
        },
        seed=24_000,
        note="variant: six nodes, seven edges with a feedback loop, b ≠ 0, unequal D, "
        "shifts +2 on x0, −3 on x4, (+2.5, −1.5) on (x2, x5)",
    ),
}


# --------------------------------------------------------------------------- data files
def data_seed(task, n, k):
    """Seed of data set k at n samples per environment (documented in the results)."""
    return task.seed + 100 * SIZES.index(n) + k


def linear_samples(task, n, k):
    """{env: (n, d) exact stationary samples}, seeded by :func:`data_seed`."""
    rng = np.random.default_rng(data_seed(task, n, k))
    L = np.linalg.cholesky(task.covariance())
    return {e: task.mean(e) + rng.standard_normal((n, task.d)) @ L.T for e in task.envs}


def data_path(name, n, k):
    return os.path.join(DATA_DIR, f"{name}_n{n}_s{k}.npz")


def write_linear(task, n, k):
    """The shared data file of one data set (written once; the same file feeds both methods)."""
    path = data_path(task.name, n, k)
    if not os.path.exists(path):
        os.makedirs(DATA_DIR, exist_ok=True)
        X = linear_samples(task, n, k)
        np.savez(
            path,
            envs=np.array(task.envs),
            targets=np.array([task.targets(e) for e in task.envs]),
            W=task.W,
            b=np.asarray(task.b),
            D=np.asarray(task.D),
            shifts=np.array([task.shift_vector(e) for e in task.envs]),
            seed=data_seed(task, n, k),
            **{f"X_{e}": X[e] for e in task.envs},
        )
    return path


def lorenz_seed(N, k):
    return 25_000 + 100 * LORENZ_SIZES.index(N) + k


def write_lorenz(model, N, k):
    """N snapshots of the stochastic Lorenz system from ``ds.simulate`` (seed lorenz_seed)."""
    path = data_path("lorenz", N, k)
    if not os.path.exists(path):
        import dynosed_sym as ds

        os.makedirs(DATA_DIR, exist_ok=True)
        X = ds.simulate(model, model.nominal, N, seed=lorenz_seed(N, k))
        np.savez(
            path,
            envs=np.array(["data"]),
            X_data=X,
            diffusion=float(model.D[0, 0]),
            theta=np.asarray(model.nominal),
            seed=lorenz_seed(N, k),
        )
    return path


def load(path):
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


# --------------------------------------------------------------------------- metrics
def auroc(scores, labels):
    """Area under the ROC curve: P(score of a true edge > score of a non-edge), ties ½."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    pos, neg = s[y], s[~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


def auprc(scores, labels):
    """Average precision: the mean over true edges of the precision at its rank (descending
    scores; tied scores enter together, at the precision of the whole tie group)."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    if not y.any():
        return float("nan")
    total, hits, seen = 0.0, 0, 0
    for v in np.unique(s)[::-1]:
        group = s == v
        seen += int(group.sum())
        new = int((group & y).sum())
        hits += new
        total += new * hits / seen
    return float(total / y.sum())


def structure_scores(W_hat, task):
    """AUROC and AUPRC of |Ŵ| (off-diagonal) against the true edges."""
    off = ~np.eye(task.d, dtype=bool)
    scores = np.abs(np.asarray(W_hat, float))[off]
    labels = task.edge_mask()[off]
    return auroc(scores, labels), auprc(scores, labels)


def w_errors(W_hat, task):
    """(RMSE, max |error|) over the off-diagonal entries of W (the diagonal is known)."""
    off = ~np.eye(task.d, dtype=bool)
    err = (np.asarray(W_hat, float) - task.W)[off]
    return float(np.sqrt(np.mean(err**2))), float(np.abs(err).max())
