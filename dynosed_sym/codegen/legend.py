"""The header of a generated module: the slot legend and the table of operation counts.

Slot legend.  Every symbol's array slot, written as ``theta[13] = W[1,6]``, packed into columns
of at most 100 characters.  Up to :data:`EXPLICIT_LIMIT` (64) slots of an array are listed one by
one; beyond that, runs of names that differ only in their last integer and follow the slots
(``k0, k1, …, k999``, or ``W[3,0] … W[3,19]``) are written as one range entry
``theta[0:1000] = k0 ... k999``, so a network with n = 1000 parameters takes a line, not 200.

Operation counts (after SymForce's generated functions): for each printed kernel, the total
operation count after joint CSE and constant folding, the intermediate terms, the outputs
written (structural zeros are not), and the slots read of each input array.
"""

from __future__ import annotations

import re

from .wrapping import WIDTH, pack_items

__all__ = ["EXPLICIT_LIMIT", "slot_entries", "legend_table", "op_table", "inputs_read"]

#: Arrays with at most this many slots are listed slot by slot in the legend.
EXPLICIT_LIMIT = 64

_LAST_INT = re.compile(r"(.*?)(\d+)(\D*)")


def slot_entries(array, names):
    """Legend entries ``array[k] = name`` (with range entries for long arrays, see above)."""
    if len(names) <= EXPLICIT_LIMIT:
        return [f"{array}[{k}] = {name}" for k, name in enumerate(names)]
    parsed = [_LAST_INT.fullmatch(name) for name in names]
    entries, k = [], 0
    while k < len(names):
        end = k + 1
        m = parsed[k]
        if m is not None:
            while end < len(names):
                nxt = parsed[end]
                if (
                    nxt is None
                    or nxt.group(1, 3) != m.group(1, 3)
                    or int(nxt.group(2)) != int(m.group(2)) + end - k
                ):
                    break
                end += 1
        if end - k >= 3:
            entries.append(f"{array}[{k}:{end}] = {names[k]} ... {names[end - 1]}")
        else:
            entries += [f"{array}[{i}] = {names[i]}" for i in range(k, end)]
        k = end
    return entries


def legend_table(entries, indent="    ", width=WIDTH):
    """Entries in aligned columns (row by row), each line at most ``width`` characters."""
    if not entries:
        return []
    cell = max(len(e) for e in entries) + 3
    per_line = max(1, (width - len(indent) + 3) // cell)
    lines = []
    for start in range(0, len(entries), per_line):
        row = entries[start : start + per_line]
        lines.append(indent + "".join(e.ljust(cell) for e in row[:-1]) + row[-1])
    return lines


def inputs_read(block, arrays):
    """``"x 7/7, theta 21/21"``: slots of each input array the printed block reads.

    arrays : list of (name, symbols): a tuple of the array's slot symbols, or one Symbol for a
    scalar input (named when read).
    """
    parts = []
    for name, symbols in arrays:
        if isinstance(symbols, tuple):
            used = sum(1 for s in symbols if s in block.symbols)
            parts.append(f"{name} {used}/{len(symbols)}")
        elif symbols in block.symbols:
            parts.append(name)
    return ", ".join(parts)


def op_table(rows, indent="    "):
    """Lines of the operation-count table; rows of (kernel, PrintedBlock, inputs text).

    Columns are as wide as their longest entry; inputs that do not fit continue on the next
    line, aligned.
    """
    cells = [("kernel", "ops", "terms", "written", "inputs read")]
    for name, block, inputs in rows:
        cells.append(
            (name, str(block.ops), str(block.n_terms), f"{block.n_written} of {block.n_outputs}")
            + (inputs,)
        )
    w = [max(len(c[k]) for c in cells) for k in range(4)]
    lines = []
    for name, ops, terms, written, inputs in cells:
        lead = f"{indent}{name:<{w[0]}}  {ops:>{w[1]}}  {terms:>{w[2]}}  {written:>{w[3]}}  "
        packed = pack_items(inputs.split(", "), " " * len(lead))
        lines.append(lead + packed[0].lstrip())
        lines += packed[1:]
    return lines


_GRID_NAME = re.compile(r"(\D*?)(\d+)(\D+?)(\d+)(\D*)")

#: Fewest names of a matrix (``W_0_0 … W_R_K``) that ``names_tuple`` writes as a generator.
GRID_MIN = 16


def _grid_at(parsed, i):
    """(R, K, text) of the row-major grid of names starting at ``i`` (``W_j_k`` for j < R,
    k < K), or None when it is shorter than GRID_MIN."""
    m = parsed[i]
    if m is None or int(m[3]) != 0:
        return None
    pre, j0, mid, _, post = m
    if any(c in pre + mid + post for c in "{}'\"\\"):
        return None

    def name(j, k):
        return (pre, str(j), mid, str(k), post)

    K = 0
    while i + K < len(parsed) and parsed[i + K] == name(j0, K):
        K += 1
    R = 0
    while all(
        i + R * K + k < len(parsed) and parsed[i + R * K + k] == name(int(j0) + R, k)
        for k in range(K)
    ):
        R += 1
    if R * K < GRID_MIN:
        return None
    rows = f"range({R})" if int(j0) == 0 else f"range({j0}, {int(j0) + R})"
    return R, K, f'*(f"{pre}{{j}}{mid}{{k}}{post}" for j in {rows} for k in range({K}))'


def names_tuple(names, indent="    "):
    """Source of a tuple of strings, packed into lines of at most 100 characters.

    A matrix of names (``W_0_0, W_0_1, …``, row-major, at least GRID_MIN) is written as a
    generator, ``*(f"W_{j}_{k}" for j in range(100) for k in range(100))``, so a network's
    10⁴ parameter names take a line.
    """
    names = [str(n) for n in names]
    parsed = [_GRID_NAME.fullmatch(n) for n in names]
    parsed = [None if m is None else m.groups() for m in parsed]
    items, i = [], 0
    while i < len(names):
        grid = _grid_at(parsed, i)
        if grid is None:
            items.append(repr(names[i]))
            i += 1
        else:
            items.append(grid[2])
            i += grid[0] * grid[1]
    one_line = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if len(one_line) <= WIDTH - 12:
        return one_line
    return "(\n" + "\n".join(pack_items(items, indent)) + ",\n)"


def ints_tuple(values, indent="    "):
    """Source of a tuple of ints: ``tuple(range(a, b))`` for a contiguous run, else packed."""
    values = [int(v) for v in values]
    if len(values) > 3 and values == list(range(values[0], values[0] + len(values))):
        start = "" if values[0] == 0 else f"{values[0]}, "
        return f"tuple(range({start}{values[0] + len(values)}))"
    one_line = "(" + ", ".join(map(str, values)) + ("," if len(values) == 1 else "") + ")"
    if len(one_line) <= WIDTH - 12:
        return one_line
    return "(\n" + "\n".join(pack_items([str(v) for v in values], indent)) + ",\n)"
