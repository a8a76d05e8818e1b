"""A minimal reverse-mode differentiator over NumPy arrays (no dependencies beyond NumPy).

Why it exists: the density model's loss is a closed-form straight-line program (flow jets →
latent mixture → Fokker–Planck residual), vectorised over collocation points.  Recording that
program once and sweeping it backwards gives the exact parameter gradient of the loss at the
cost of about two forward passes, without pulling an autodiff framework into the core.  Only the
operations the density model uses are provided; each one's vector–Jacobian product is written out
below next to its forward rule and is checked against finite differences in tests/test_density.py.

A :class:`Node` holds a value and, for every input that is itself a node, a function mapping the
output's adjoint to that input's adjoint.  Plain arrays entering an operation are constants.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Node", "var", "value_of", "backward", "einsum", "exp", "log", "tanh", "lse", "total"]


class Node:
    """A recorded array value with the adjoint rules of the operation that produced it."""

    __slots__ = ("value", "parents")
    __array_ufunc__ = None  # so that ``ndarray * Node`` defers to Node.__rmul__

    def __init__(self, value, parents=()):
        self.value = value
        self.parents = parents  # tuple of (Node, vjp: adjoint of output -> adjoint of input)

    @property
    def shape(self):
        return np.shape(self.value)

    def __add__(self, other):
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other):
        return add(self, neg(other))

    def __rsub__(self, other):
        return add(other, neg(self))

    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return mul(self, reciprocal(other))

    def __neg__(self):
        return neg(self)

    def __repr__(self):
        return f"Node(shape={self.shape})"


def var(value) -> Node:
    """A leaf node (a trainable array)."""
    return Node(np.asarray(value, dtype=float))


def value_of(a):
    return a.value if isinstance(a, Node) else a


def _node(value, *inputs_and_vjps):
    parents = tuple((a, f) for a, f in inputs_and_vjps if isinstance(a, Node))
    return Node(value, parents) if parents else value


def _unbroadcast(g, shape):
    """Sum an adjoint over the axes along which an input of ``shape`` was broadcast."""
    if g.shape == tuple(shape):
        return g
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g


def add(a, b):
    va, vb = value_of(a), value_of(b)
    sa, sb = np.shape(va), np.shape(vb)
    return _node(va + vb, (a, lambda g: _unbroadcast(g, sa)), (b, lambda g: _unbroadcast(g, sb)))


def neg(a):
    return _node(-value_of(a), (a, lambda g: -g))


def mul(a, b):
    va, vb = value_of(a), value_of(b)
    sa, sb = np.shape(va), np.shape(vb)
    return _node(
        va * vb, (a, lambda g: _unbroadcast(g * vb, sa)), (b, lambda g: _unbroadcast(g * va, sb))
    )


def reciprocal(a):
    r = 1.0 / value_of(a)
    return _node(r, (a, lambda g: -g * r * r))


def exp(a):
    e = np.exp(value_of(a))
    return _node(e, (a, lambda g: g * e))


def log(a):
    """Natural logarithm (of positive values)."""
    va = value_of(a)
    return _node(np.log(va), (a, lambda g: g / va))


def tanh(a):
    t = np.tanh(value_of(a))
    return _node(t, (a, lambda g: g * (1.0 - t * t)))


def total(a, axis=None):
    """Sum over ``axis`` (an int or None), like ``numpy.sum`` without keepdims."""
    va = value_of(a)
    shape = np.shape(va)

    def vjp(g):
        if axis is not None:
            g = np.expand_dims(g, axis)
        return np.broadcast_to(g, shape)

    return _node(np.sum(va, axis=axis), (a, vjp))


def lse(a, axis=-1):
    """log Σ exp along ``axis`` (stable); its adjoint is the softmax times the output's adjoint."""
    va = value_of(a)
    m = np.max(va, axis=axis, keepdims=True)
    w = np.exp(va - m)
    ssum = w.sum(axis=axis, keepdims=True)
    out = np.squeeze(m + np.log(ssum), axis=axis)
    soft = w / ssum
    return _node(out, (a, lambda g: np.expand_dims(g, axis) * soft))


_PATHS: dict = {}


def _einsum(spec, values):
    """``numpy.einsum``; the contraction order of 3+ operands is planned once per spec/shapes."""
    if len(values) <= 2:
        return np.einsum(spec, *values)
    key = (spec, tuple(np.shape(v) for v in values))
    path = _PATHS.get(key)
    if path is None:
        path = _PATHS[key] = np.einsum_path(spec, *values, optimize="greedy")[0]
    return np.einsum(spec, *values, optimize=path)


def einsum(spec, *operands):
    """``numpy.einsum`` with an explicit output (``'ij,nj->ni'``); no index repeated in one operand.

    The adjoint of operand k is the einsum of the output's adjoint with the other operands onto
    k's indices; indices found only in operand k (summed in the forward pass) are broadcast back.
    """
    ins, out = spec.replace(" ", "").split("->")
    in_specs = ins.split(",")
    values = [value_of(a) for a in operands]
    result = _einsum(spec, values)

    def make_vjp(k):
        def vjp(g):
            others = [s for i, s in enumerate(in_specs) if i != k] + [out]
            other_vals = [v for i, v in enumerate(values) if i != k] + [g]
            present = set("".join(others))
            target = in_specs[k]
            kept = "".join(ch for ch in target if ch in present)
            r = _einsum(",".join(others) + "->" + kept, other_vals)
            if kept != target:  # broadcast over the indices only operand k carried
                shape = np.shape(values[k])
                r = np.expand_dims(r, [i for i, ch in enumerate(target) if ch not in present])
                r = np.broadcast_to(r, shape)
            return r

        return vjp

    return _node(result, *[(a, make_vjp(k)) for k, a in enumerate(operands)])


def backward(output, leaves):
    """Adjoints of the scalar ``output`` with respect to each node in ``leaves``.

    Returns
    -------
    list of numpy.ndarray
        One array per leaf, of the leaf's shape (zeros where the output does not depend on it).
    """
    order, seen, stack_ = [], set(), [(output, False)]
    while stack_:  # iterative post-order depth-first search: every node after its inputs
        node, done = stack_.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack_.append((node, True))
        for parent, _ in node.parents:
            if id(parent) not in seen:
                stack_.append((parent, False))
    leaf_ids = {id(leaf) for leaf in leaves}
    grads = {id(output): np.ones_like(output.value)}
    for node in reversed(order):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        for parent, vjp in node.parents:
            contribution = vjp(g)
            key = id(parent)
            if key in grads:
                grads[key] = grads[key] + contribution
            else:
                grads[key] = np.array(contribution, dtype=float)
        if id(node) in leaf_ids:
            grads[id(node)] = g  # keep a leaf's adjoint for the caller
    return [
        np.asarray(grads.get(id(leaf), np.zeros(leaf.shape)), dtype=float).reshape(leaf.shape)
        for leaf in leaves
    ]
