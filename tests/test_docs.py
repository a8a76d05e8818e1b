"""The documentation stays true: its code runs, its shown output matches, its links resolve.

Code blocks of README.md and docs/*.md, by the fence's info string:

* ```` ```python ````: run by the suite.  The blocks of one page run in order in one namespace,
  with the repository root as working directory (so ``models/…`` paths work); files a page writes
  at the root are removed afterwards (write folders elsewhere).  One page runs at a time across
  the test processes (a lock file): a page's cleanup must not remove what another page, running
  in the other process of ``pytest -n 2``, has just written there.
* ```` ```python slow ````: longer examples, run (after the page's fast blocks they follow)
  by the page's ``@pytest.mark.slow`` test.
* ```` ```python no-run ````: not run (the text beside it says why: it needs a cluster, it is a
  signature, …).
* ```` ```text output ```` right after a Python block: what that block prints, compared with
  ``doctest``'s ELLIPSIS and NORMALIZE_WHITESPACE rules (``...`` stands for any text, e.g. the
  trailing digits of a measured number).

Other fences (``console``, ``text``, ``bash``) are shown, not run.  Links to files and headings
inside the repository must resolve, nothing may point outside it, and the Sphinx toctree must
name pages that exist (``make docs`` builds them).
"""

from __future__ import annotations

import contextlib
import doctest
import fcntl
import hashlib
import io
import os
import pathlib
import re
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
RUN_KINDS = {"python": "fast", "python slow": "slow", "python no-run": None}


def _blocks(page):
    """[(kind, source, expected output or None, line)] of a page's Python blocks, in order."""
    text = page.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        info = " ".join(match.group(1).split())
        line = text.count("\n", 0, match.start()) + 1
        if info == "text output":
            if not out or out[-1][2] is not None or out[-1][0] is None:
                raise AssertionError(f"{page.name}:{line}: output block without a Python block")
            kind, src, _, at = out[-1]
            out[-1] = (kind, src, match.group(2), at)
        elif info.startswith("python"):
            if info not in RUN_KINDS:
                raise AssertionError(f"{page.name}:{line}: unknown fence info string {info!r}")
            out.append((RUN_KINDS[info], match.group(2), None, line))
    return out


def _rel(page):
    return str(page.relative_to(ROOT))


@contextlib.contextmanager
def _root_lock():
    """Hold an exclusive lock shared by every test process (pytest-xdist) while a page runs in the
    repository root: the pages' file cleanup compares the root's listing before and after."""
    digest = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]  # one lock per checkout
    with open(pathlib.Path(tempfile.gettempdir()) / f"dynosed-docs-{digest}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run_page(page, kinds, monkeypatch):
    """Run the page's blocks of the given kinds in one namespace; compare shown output."""
    blocks = [b for b in _blocks(page) if b[0] in kinds]
    if not blocks:
        pytest.skip(f"{_rel(page)} has no {'/'.join(kinds)} Python blocks")
    with _root_lock():
        _run_blocks(page, blocks, monkeypatch)


def _run_blocks(page, blocks, monkeypatch):
    monkeypatch.chdir(ROOT)
    before = set(os.listdir(ROOT))
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    ns = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    timings = []
    try:
        for _, src, want, line in blocks:
            where = f"{_rel(page)}:{line}"
            buf = io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(buf):
                exec(compile(src, where, "exec"), ns)  # noqa: S102 (the docs' own examples)
            timings.append((where, time.perf_counter() - t0))
            got = buf.getvalue()
            if want is not None and not checker.check_output(want, got, flags):
                diff = checker.output_difference(doctest.Example(src, want), got, flags)
                pytest.fail(f"{where}: the printed output differs from the page\n{diff}")
    finally:
        for name in set(os.listdir(ROOT)) - before:  # files the examples wrote (not folders)
            if (ROOT / name).is_file():
                (ROOT / name).unlink()
    for where, seconds in timings:
        print(f"{where}: {seconds:.1f} s")


def _pages_with(kind):
    return [p for p in PAGES if any(b[0] == kind for b in _blocks(p))]


@pytest.mark.parametrize("page", _pages_with("fast"), ids=_rel)
def test_fast_blocks_run(page, monkeypatch):
    _run_page(page, {"fast"}, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with("slow"), ids=_rel)
def test_slow_blocks_run(page, monkeypatch):
    _run_page(page, {"fast", "slow"}, monkeypatch)


# ------------------------------------------------------------------------------------ links
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading):
    """GitHub's (and MyST's) anchor of a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_links_resolve_inside_the_repository(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: outside links are allowed
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{_rel(page)}: link to missing file {target}"
        assert dest.is_relative_to(ROOT), f"{_rel(page)}: link leaves the repository: {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{_rel(page)}: no heading #{anchor} in {path}"


def test_nothing_refers_outside_the_repository():
    """Method references point at docs/method.md, not at notes kept outside the repository."""
    bad = re.compile("DESIGN" + r" §|\.\./" + "shared|/" + "work/")
    files = [*PAGES, *(ROOT / "dynosed_sym").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    found = [
        f"{f.relative_to(ROOT)}:{i}"
        for f in files
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if bad.search(line)
    ]
    assert not found, found


def test_method_section_references_exist():
    """Every "docs/method.md §N" in the code names a section the page has."""
    sections = set(re.findall(r"^## (\d+)\. ", (DOCS / "method.md").read_text("utf-8"), re.M))
    files = [*(ROOT / "dynosed_sym").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *PAGES]
    cited = {
        (f.relative_to(ROOT), n)
        for f in files
        for n in re.findall(r"method\.md §(\d+)", f.read_text(encoding="utf-8"))
    }
    assert cited, "no code cites the method notes"
    assert all(n in sections for _, n in cited), sorted(c for c in cited if c[1] not in sections)


TOCTREE = re.compile(r"```\{toctree\}\n(.*?)```|\.\. toctree::\n((?:[ \t]+.*\n|\n)*)", re.S)


def test_sphinx_toctree_pages_exist():
    """docs/conf.py is there and every toctree entry names a page (``make docs`` builds them)."""
    assert (DOCS / "conf.py").is_file()
    sources = [*DOCS.glob("*.md"), *DOCS.rglob("*.rst")]
    entries = 0
    for src in sources:
        text = src.read_text(encoding="utf-8")
        for block in TOCTREE.findall(text):
            for line in "".join(block).splitlines():
                name = line.strip()
                if not name or name.startswith(":"):
                    continue
                entries += 1
                base = src.parent / name
                assert base.with_suffix(".md").exists() or base.with_suffix(".rst").exists(), (
                    f"{src.relative_to(ROOT)}: toctree entry {name!r} has no page"
                )
    assert entries
