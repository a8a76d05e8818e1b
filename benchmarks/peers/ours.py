"""Our side of the peer benchmark: the models, the fits and the cold-start compile time.

The interventional tasks are declared the documented way (docs/designs.md, "Shift
interventions"): the base model ``dx_j = (−x_j + Σ_{k≠j} W[j,k] x_k + b_j) dt + √(2D_j) dW_j`` (the
diagonal of W known, −1, as stadion fixes it too) and ``ds.shift_interventions`` with the known
targets of each environment, whose shifts are unknown and pinned to 0 in the observational
environment.  ``fit_global`` gets the dict of environments, once with its default estimator and
once with ``statistic="v", estimator="ridge"``.

Run as a script (``python ours.py --cold TASK FILE``) it measures what a new user pays once: a
fresh process with empty code-generation and Numba caches fits one data set twice; the first fit
minus the second is the code generation and compilation (one kernel module per distinct input
vector, i.e. per environment).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import sympy as sp
import tasks

ESTIMATORS = {"default": {}, "ridge": {"statistic": "v", "estimator": "ridge"}}
DEFAULT = "default"


def base_model(task):
    """The linear SDE without interventions: W off the diagonal and b unknown."""
    import dynosed_sym as ds

    d = task.d
    x = sp.symbols(f"x0:{d}", real=True)
    W = {(j, k): sp.Symbol(f"W[{j},{k}]", real=True) for j in range(d) for k in range(d) if j != k}
    b = sp.symbols(f"b0:{d}", real=True)
    drift = [-x[j] + sum(W[j, k] * x[k] for k in range(d) if k != j) + b[j] for j in range(d)]
    return ds.SDEModel(list(x), [*W.values(), *b], drift, list(task.D), name=f"peers_{task.name}")


def shift_design(task):
    """``ds.shift_interventions`` with the known targets of every environment."""
    import dynosed_sym as ds

    targets = {e: [f"x{j}" for j in task.shifts[e]] for e in task.envs}
    return ds.shift_interventions(base_model(task), targets)


def truth_by_name(task, design):
    W = task.W
    out = {f"W[{j},{k}]": float(W[j, k]) for j in range(task.d) for k in range(task.d) if j != k}
    out.update({f"b{j}": float(v) for j, v in enumerate(task.b)})
    for e, spec in design.shifts.items():
        for var, name in spec.items():
            out[name] = float(task.shifts[e][int(var[1:])])
    return out


def _record(fit, truth, seconds, cpu):
    ci = fit.conf_int()
    return {
        "names": list(fit.param_names),
        "theta": np.asarray(fit.theta, float).tolist(),
        "truth": [truth[p] for p in fit.param_names],
        "ci": np.asarray(ci, float).tolist(),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rank": int(fit.report.rank),
        "n_params": len(fit.param_names),
        "converged": bool(fit.converged),
        "estimator": fit.info.get("estimator"),
        "statistic": fit.info.get("statistic"),
    }


def w_matrix(task, rec):
    W = -np.eye(task.d)
    for nm, v in zip(rec["names"], rec["theta"]):
        if nm.startswith("W["):
            j, k = map(int, nm[2:-1].split(","))
            W[j, k] = v
    return W


def fit_linear(task, n, sets=tasks.N_SETS, warm_up=True):
    """{estimator: [record per data set]} for the data sets of ``task`` at n per environment."""
    import dynosed_sym as ds

    design = shift_design(task)
    truth = truth_by_name(task, design)
    files = [tasks.load(tasks.write_linear(task, n, k)) for k in range(sets)]
    data = [{e: f[f"X_{e}"] for e in task.envs} for f in files]
    out = {}
    for key, kw in ESTIMATORS.items():
        if warm_up:  # load the cached kernels once; not timed
            ds.fit_global(
                design.model,
                data[0],
                inputs=design.inputs,
                features=ds.Features(seed=0),
                solver=ds.Solver(**kw),
            )
        out[key] = []
        for k, X in enumerate(data):
            t0, c0 = time.perf_counter(), time.process_time()
            fit = ds.fit_global(
                design.model,
                X,
                inputs=design.inputs,
                features=ds.Features(seed=k),
                solver=ds.Solver(**kw),
            )
            t, c = time.perf_counter() - t0, time.process_time() - c0
            out[key].append(_record(fit, truth, t, c))
    return out


def lorenz_model():
    import dynosed_sym as ds

    return ds.load_model(os.path.join(tasks.ROOT, "models", "lorenz.py"))


def fit_lorenz(N, sets=tasks.N_SETS):
    import dynosed_sym as ds

    model = lorenz_model()
    truth = dict(zip(model.param_names, np.asarray(model.nominal, float).tolist()))
    data = [tasks.load(tasks.write_lorenz(model, N, k))["X_data"] for k in range(sets)]
    out = {}
    for key, kw in ESTIMATORS.items():
        ds.fit_global(
            model, data[0], features=ds.Features(seed=0), solver=ds.Solver(**kw)
        )  # warm-up, not timed
        out[key] = []
        for k, X in enumerate(data):
            t0, c0 = time.perf_counter(), time.process_time()
            fit = ds.fit_global(model, X, features=ds.Features(seed=k), solver=ds.Solver(**kw))
            t, c = time.perf_counter() - t0, time.process_time() - c0
            out[key].append(_record(fit, truth, t, c))
    return out


def cold_compile(kind, n):
    """{first, second, compile}: seconds of two identical fits in a fresh process whose
    code-generation and Numba caches are empty (``kind``: a task name or "lorenz")."""
    with tempfile.TemporaryDirectory(prefix="dynosed_peers_") as tmp:
        env = dict(os.environ, DYNOSED_GENERATED_DIR=os.path.join(tmp, "gen"))
        env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--cold", kind, str(n)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"cold-start run failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[len("RESULT ") :])


def _cold_main(kind, n):
    import dynosed_sym as ds

    if kind == "lorenz":
        model, inputs = lorenz_model(), None
        X = tasks.load(tasks.write_lorenz(model, n, 0))["X_data"]
    else:
        task = tasks.TASKS[kind]
        design = shift_design(task)
        model, inputs = design.model, design.inputs
        f = tasks.load(tasks.write_linear(task, n, 0))
        X = {e: f[f"X_{e}"] for e in task.envs}
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        ds.fit_global(model, X, inputs=inputs, features=ds.Features(seed=0))
        times.append(time.perf_counter() - t0)
    res = {"first": times[0], "second": times[1], "compile": times[0] - times[1]}
    print("RESULT " + json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--cold":
        _cold_main(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit("usage: python ours.py --cold TASK N  (called by run.py)")
