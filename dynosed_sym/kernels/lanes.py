"""Lane blocks of the simulator: the model-independent parts of a generated ``simulate_chains``.

Scheme (reference paper, supplement): RK4 for the drift plus an Euler–Maruyama noise increment
``sqrt(dt) G eta`` when the noise matrix G is constant; plain Euler–Maruyama when G depends on
the state.  A generated module keeps only what calls its own printed kernels (``drift_lanes``,
``noise_lanes``): the block loop and the stage calls.  Everything else is here.

Layout.  Chains run in blocks of ``width`` lanes (a multiple of 8, at most :data:`LANES`, set by
the number of chains C alone).  A block holds state j of lane l at ``x[j*LANES + l]`` (flat,
structure of arrays), so every inner loop runs over lanes and LLVM vectorises the drift, the
normals and the update across chains.  Lanes ``nr..width-1`` of the last block repeat its last
chain.  G(x) of lane l sits at ``Gx[(i*d' + q)*LANES + l]``.

Streams.  Chain c draws from the counter-based stream keyed by ``keys[c]``
(:mod:`.rng`): step s (1-based) uses numbers ``(s-1)·2⌈d'/2⌉ + 1 …`` of it.  A lane's
arithmetic never depends on the other lanes, the block or the thread, so results do not depend
on the number of threads or on scheduling.

Records and status.  Record k (0-based) of a chain is its state after ``n_burn + (k+1)·thin``
steps (``simulate`` then moves the records of a constant-G model to the middle of their step's
noise increment, :func:`half_kick_records`).  ``status[c]`` is 0, or the first step at which
a state of chain c was not finite; when a chain diverges its whole block stops (chains of that
block that were still finite keep status 0 and incomplete records).

Every helper is a function of its own (``inline="never"``, ``fastmath=False``, cached on disk
with this module): compiled once for every model, where inlining them into each generated
kernel cost seconds of compilation per model.  Without fast-math flags LLVM neither reorders
nor contracts their arithmetic, so it is the same operation for operation wherever it runs.
:func:`normals_lanes` is compiled with ``fastmath={"contract"}`` only (FMA contraction of the
polynomials; every lane runs the same instructions, so results stay independent of lane, block
and thread; the hash and the bit manipulations stay exact).

Threads.  A generated ``simulate_chains`` runs its blocks one after the other; the chains are
split into parts run on threads by :meth:`dynosed_sym.codegen.loading.CompiledModel.run_chains`
(the kernels release the GIL).  A parallel loop inside the kernel cost more compilation than
the whole serial kernel.
"""

import math

import numpy as np

from .jit import kernel
from .rng import GOLDEN, normal_pair

__all__ = [
    "LANES",
    "normals_lanes",
    "stream_position",
    "layout",
    "open_block",
    "rk4_first",
    "rk4_middle",
    "rk4_last",
    "em_step",
    "stopped",
    "HALF_KICK_OFFSET",
    "half_kick_records",
]

#: Lanes of a block: the width of every lane buffer.
LANES = 64

#: The options of every block helper: a separate, cached function (see the module docstring).
block_helper = kernel(inline="never")


@kernel(fastmath={"contract"}, inline="never")
def normals_lanes(keys, counter, eta, nq, nl):
    """Standard normals eta[q, l] (q < nq, l < nl) from the streams keyed by keys[l] (LANES,).

    A Box-Muller pair uses stream numbers counter + p + 1 and counter + p + 2.  Returns the
    counter advanced past the 2 * ceil(nq / 2) numbers used.  eta (>= nq + nq % 2, LANES).
    """
    golden = np.uint64(GOLDEN)
    counter = np.uint64(counter)  # an int64 counter would promote the hash input to float64
    for p in range(0, nq, 2):
        s1 = (counter + np.uint64(p + 1)) * golden
        s2 = (counter + np.uint64(p + 2)) * golden
        for l in range(min(nl, LANES)):  # the bound lets LLVM prove the indices non-negative
            eta[p, l], eta[p + 1, l] = normal_pair(keys[l] + s1, keys[l] + s2)
    return counter + np.uint64(2 * ((nq + 1) // 2))


@block_helper
def stream_position(step, nq):
    """Counter of a stream before step ``step`` (1-based) when every step draws nq normals."""
    return np.uint64(step - 1) * np.uint64(2 * ((nq + 1) // 2))


@block_helper
def layout(n_chains):
    """(width, n_blocks): lanes per block, a multiple of 8, at most LANES (full blocks: the
    blocks run one after the other)."""
    width = min(LANES, 8 * max(1, -(-n_chains // 8)))
    return width, -(-n_chains // width)


@block_helper
def open_block(x0, keys, status, G, blk, width):
    """Buffers of block ``blk``, loaded with its chains' start states and keys.

    Returns x, xs, k1, k2, acc (d*LANES,) state, stage state, stages and increment (zeroed, so
    a kernel may leave structurally zero entries unwritten), eta (d' + 1, LANES) normals and
    lkeys (LANES,) uint64.  Sets status 0 for the block's chains.
    """
    n_chains, d = x0.shape
    c0 = blk * width
    nr = min(width, n_chains - c0)  # real lanes; lanes nr..width-1 repeat chain c0 + nr - 1
    x = np.zeros(d * LANES)
    xs = np.zeros(d * LANES)
    k1 = np.zeros(d * LANES)
    k2 = np.zeros(d * LANES)
    acc = np.zeros(d * LANES)
    eta = np.zeros((G.shape[1] + 1, LANES))
    lkeys = np.zeros(LANES, dtype=np.uint64)
    for l in range(width):
        c = c0 + min(l, nr - 1)
        lkeys[l] = keys[c]
        for j in range(d):
            x[j * LANES + l] = x0[c, j]
    for l in range(nr):
        status[c0 + l] = 0
    return x, xs, k1, k2, acc, eta, lkeys


@block_helper
def rk4_first(x, k1, xs, acc, dt, nl):
    """After the first RK4 stage: xs = x + dt/2 k1, acc = k1 (lanes l < nl)."""
    hdt = 0.5 * dt
    for j in range(x.size // LANES):
        r = j * LANES
        for l in range(nl):
            xs[r + l] = x[r + l] + hdt * k1[r + l]
            acc[r + l] = k1[r + l]


@block_helper
def rk4_middle(x, k, xs, acc, h, nl):
    """After the second or third RK4 stage k: xs = x + h k, acc += 2 k (lanes l < nl)."""
    for j in range(x.size // LANES):
        r = j * LANES
        for l in range(nl):
            xs[r + l] = x[r + l] + h * k[r + l]
            acc[r + l] = acc[r + l] + 2.0 * k[r + l]


@block_helper
def rk4_last(x, k4, acc, G, eta, lkeys, step, dt, nl):
    """Last RK4 stage plus noise: x += dt/6 (k1 + 2 k2 + 2 k3 + k4) + sqrt(dt) G eta.

    acc holds k1 + 2 k2 + 2 k3 (in that order); eta gets this step's normals.  Zero entries
    of the constant G (d, d') are skipped.
    """
    dn = G.shape[1]
    normals_lanes(lkeys, stream_position(step, dn), eta, dn, nl)
    dt6 = dt / 6.0
    sqdt = math.sqrt(dt)
    for j in range(x.size // LANES):
        r = j * LANES
        for l in range(nl):
            acc[r + l] = dt6 * (acc[r + l] + k4[r + l])
        for q in range(dn):
            g = sqdt * G[j, q]
            if g != 0.0:
                for l in range(nl):
                    acc[r + l] += g * eta[q, l]
        for l in range(nl):
            x[r + l] = x[r + l] + acc[r + l]


@block_helper
def em_step(x, f, Gx, acc, eta, lkeys, step, dt, nl):
    """Euler–Maruyama with a state-dependent noise matrix: x += dt f + sqrt(dt) G(x) eta.

    f (d*LANES,) the drift and Gx (d*d'*LANES,) the noise matrix at x; eta gets this step's
    normals.
    """
    d = x.size // LANES
    dn = Gx.size // x.size
    normals_lanes(lkeys, stream_position(step, dn), eta, dn, nl)
    sqdt = math.sqrt(dt)
    for j in range(d):
        r = j * LANES
        for l in range(nl):
            acc[r + l] = dt * f[r + l]
        for q in range(dn):
            rg = (j * dn + q) * LANES
            for l in range(nl):
                acc[r + l] += sqdt * (Gx[rg + l] * eta[q, l])
        for l in range(nl):
            x[r + l] = x[r + l] + acc[r + l]


@block_helper
def stopped(x, out, status, blk, width, step, n_burn, thin):
    """After step ``step`` of block ``blk``: True when a chain diverged (its status is set);
    else the block's states are recorded in out (n_keep, C, d) when the step is one to keep."""
    c0 = blk * width
    nr = min(width, status.size - c0)
    d = x.size // LANES
    # a non-finite coordinate stays non-finite (x + anything); v - v is nan exactly then
    nbad = 0
    for j in range(d):
        for l in range(nr):
            v = x[j * LANES + l]
            nbad += (v - v) != 0.0
    if nbad > 0:
        for l in range(nr):
            for j in range(d):
                v = x[j * LANES + l]
                if (v - v) != 0.0:
                    status[c0 + l] = step
        return True
    if step > n_burn and (step - n_burn) % thin == 0:
        kept = (step - n_burn) // thin - 1
        for l in range(nr):
            for j in range(d):
                out[kept, c0 + l, j] = x[j * LANES + l]
    return False


#: Counter offset of the extra normals of :func:`half_kick_records` in a chain's stream: far past
#: any step's numbers (a chain would need 2**62 steps to reach it).
HALF_KICK_OFFSET = 1 << 63


@block_helper
def half_kick_records(out, keys, G, dt, n_burn, thin):
    """Move every record from the end of its step to the middle of the step's noise increment.

    Record k of chain c is ``x = Φ(x') + sqrt(dt) G eta`` (Φ the RK4 flow, eta the step's
    normals, regenerated here from the chain's stream).  Split ``sqrt(dt) G eta`` into two
    independent half increments ``sqrt(dt/2) G xi`` and ``sqrt(dt/2) G xi'`` with
    ``xi = (eta + zeta)/sqrt(2)``, ``xi' = (eta - zeta)/sqrt(2)`` (zeta fresh normals from the
    same stream at :data:`HALF_KICK_OFFSET`); the record becomes ``x - sqrt(dt)/2 G (eta - zeta)
    = Φ(x') + sqrt(dt/2) G xi``.  The recorded states are then those of the symmetric (Strang)
    splitting half kick · flow · half kick, whose stationary law is second-order accurate in dt
    where the end-of-step records' is first-order (see ``docs/models.md``).  The chains
    themselves are unchanged.  out (n_keep, C, d) in place; keys (C,) uint64; G (d, d').
    """
    n_keep, n_chains, d = out.shape
    dn = G.shape[1]
    eta = np.zeros((dn + 1, LANES))
    zeta = np.zeros((dn + 1, LANES))
    lkeys = np.zeros(LANES, dtype=np.uint64)
    half = 0.5 * math.sqrt(dt)
    offset = np.uint64(HALF_KICK_OFFSET)
    for c0 in range(0, n_chains, LANES):
        nl = min(LANES, n_chains - c0)
        for l in range(nl):
            lkeys[l] = keys[c0 + l]
        for k in range(n_keep):
            position = stream_position(n_burn + (k + 1) * thin, dn)
            normals_lanes(lkeys, position, eta, dn, nl)
            normals_lanes(lkeys, position + offset, zeta, dn, nl)
            for j in range(d):
                for q in range(dn):
                    g = half * G[j, q]
                    if g != 0.0:
                        for l in range(nl):
                            out[k, c0 + l, j] -= g * (eta[q, l] - zeta[q, l])
