"""Line wrapping of printed code at about 100 columns (deterministic, valid Python).

A long assignment ``target = expr`` becomes ``target = (`` / wrapped lines / ``)``.  Inside the
parentheses a line break between two tokens never changes what Python parses, so a wrapped line
computes exactly what the long one did (same syntax tree, same floating-point operations).  Break
points, in order of preference: top-level ``+``/``-`` (the operator starts the continuation
line), then top-level ``if``/``else`` and commas, then ``*``/``/``; a piece without any of those
(a call or a parenthesised group) is opened up: ``head(``, its contents one level deeper, ``)``.
Pieces are packed greedily, as many per line as fit.
"""

from __future__ import annotations

__all__ = ["WIDTH", "wrap_assignment", "wrap_expression", "pack_items"]

#: Target line width of generated modules.
WIDTH = 100

_OPENING, _CLOSING = "([{", ")]}"
_LEVELS = ((" + ", " - "), (" if ", " else "), (", ",), ("*", "/"))


def _split_top(code, ops):
    """Split ``code`` at operators of ``ops`` at bracket depth 0: [(op, piece)], first op ''.

    ``*`` never matches inside ``**`` and ``/`` never inside ``//``.
    """
    parts, depth, start, op_before, i = [], 0, 0, "", 0
    while i < len(code):
        ch = code[i]
        if ch in _OPENING:
            depth += 1
        elif ch in _CLOSING:
            depth -= 1
        elif depth == 0:
            for op in ops:
                if not code.startswith(op, i):
                    continue
                if op in ("*", "/") and (
                    code[i - 1 : i] == op or code[i + 1 : i + 2] == op or i == 0
                ):
                    continue  # part of ** or //, or a leading sign
                parts.append((op_before, code[start:i]))
                op_before, start = op, i + len(op)
                i += len(op) - 1
                break
        i += 1
    parts.append((op_before, code[start:]))
    return parts


def _group(code):
    """``(head, inner, tail)`` when ``code`` is ``head(inner)tail``: the last top-level round
    group, followed by a short tail without brackets (e.g. ``**2``); else None."""
    depth, open_at, span = 0, None, None
    for i, ch in enumerate(code):
        if ch in _OPENING:
            if depth == 0:
                open_at = i
            depth += 1
        elif ch in _CLOSING:
            depth -= 1
            if depth == 0:
                span = (open_at, i) if code[open_at] == "(" else None
    if span is None:
        return None
    tail = code[span[1] :]
    if len(tail) > 12 or any(c in tail[1:] for c in _OPENING + _CLOSING):
        return None
    return code[: span[0] + 1], code[span[0] + 1 : span[1]], tail


def wrap_expression(code, indent, width=WIDTH, first=""):
    """Lines of ``first + code`` at ``indent``, wrapped at ``width`` where possible.

    The lines must sit inside brackets (implicit line continuation).  A piece that cannot be
    broken (one long token) is left long.
    """
    line = indent + first + code
    if len(line) <= width:
        return [line]
    parts = []
    for ops in _LEVELS:
        if ops == ("*", "/"):  # before splitting a product, open up its last group
            group = _group(code)
            if group is not None and len(indent + first + group[0]) <= width:
                head, inner, tail = group
                return (
                    [indent + first + head]
                    + wrap_expression(inner, indent + "    ", width)
                    + [indent + tail]
                )
        parts = _split_top(code, ops)
        if len(parts) > 1:
            break
    if len(parts) < 2:
        return [line]
    # (joiner, text): the text of a piece with its operator, and what joins it to the previous
    # piece on the same line (nothing at the start of a line)
    items = []
    for op, piece in parts:
        if op == ", ":
            items[-1] = (items[-1][0], items[-1][1] + ",")
            items.append((" ", piece))
        elif op in ("*", "/"):
            items.append(("", op + piece))
        elif op:
            items.append((" ", op.strip() + " " + piece))
        else:
            items.append(("", piece))
    lines, current, started = [], first, False  # started: a piece of code is on the line
    for joiner, text in items:
        candidate = current + (joiner if started else "") + text
        if len(indent + candidate) <= width:
            current, started = candidate, True
            continue
        if started:
            lines.append(indent + current)
            current, started = "", False
        if len(indent + current + text) <= width:
            current += text
        else:  # a piece too long for a line of its own: open it up
            sub = wrap_expression(text, indent, width, first=current)
            lines.extend(sub[:-1])
            current = sub[-1][len(indent) :]
        started = True
    if current:
        lines.append(indent + current)
    return lines


def wrap_assignment(target, code, indent, width=WIDTH):
    """``target = code`` at ``indent``, as one line or wrapped in parentheses."""
    line = f"{indent}{target} = {code}"
    if len(line) <= width:
        return [line]
    inner = wrap_expression(code, indent + "    ", width)
    return [f"{indent}{target} = ("] + inner + [f"{indent})"]


def pack_items(items, indent, width=WIDTH, sep=", "):
    """Items joined by ``sep`` and packed greedily into lines of at most ``width`` columns
    (each line but the last ends with the separator, stripped of trailing space)."""
    lines, current = [], ""
    for item in items:
        candidate = current + sep + item if current else item
        if current and len(indent + candidate + sep.rstrip()) > width:
            lines.append(indent + current + sep.rstrip())
            current = item
        else:
            current = candidate
    if current:
        lines.append(indent + current)
    return lines
