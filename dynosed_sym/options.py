"""Execution options shared by the entry points, and the constants behind their defaults.

Every entry point that reads data or runs kernels (:func:`~dynosed_sym.simulate`,
:func:`~dynosed_sym.fit_global`, :func:`~dynosed_sym.fit_local`,
:func:`~dynosed_sym.check_identifiability`, :func:`~dynosed_sym.density_from_dynamics`) takes
the same keyword options for *how* it runs — noise blocks, rows per kernel call, progress bar,
folder of generated kernels, Dask backend — documented once here (:data:`EXECUTION_DOC`) and
validated once (:meth:`Execution.resolve`).

*What* an entry point computes is set by small frozen dataclasses, one per concept (e.g.
:class:`dynosed_sym.density.Training`): defaults in the fields, validation in ``__post_init__``
(:func:`dynosed_sym.arguments.check_field`), variants by :func:`dataclasses.replace`.  The entry
point takes each as a keyword named after the class (``training=Training(n_steps=6000)``; None
means the defaults) and resolves it with :func:`option`; :func:`moved_keywords` folds the flat
keywords such an object replaced into it, with a :class:`FutureWarning`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from . import arguments

__all__ = [
    "Execution",
    "option",
    "moved_keywords",
    "moved_to",
    "option_objects",
    "resolve_options",
    "EXECUTION_DOC",
    "execution_doc",
    "DEFAULT_BLOCKS",
    "MIN_BLOCK_ROWS",
    "CHUNK_ROWS",
    "BANDWIDTH_ROWS",
    "BACKENDS",
    "out_dir_path",
]

DEFAULT_BLOCKS = 32  # data blocks for sampling-noise estimates
MIN_BLOCK_ROWS = 4  # smallest noise block
CHUNK_ROWS = 65536  # rows per kernel call when streaming (bounds the memory of one call)
BANDWIDTH_ROWS = 65536  # the median bandwidth is taken from (a subsample of) the first rows
BACKENDS = (None, "local", "dask")

_BLOCKS_RULE = (
    "the global route and the identifiability checks need at least 1 noise block; fit_local also "
    "takes 0 (no sampling-noise blocks: no standard errors, rank test or p-value)"
)

#: The numpydoc "Parameters" entries of the execution options, shared by the entry points.
EXECUTION_DOC = {
    "n_blocks": """\
    n_blocks : int
        Contiguous data blocks behind the sampling-noise estimates (rank, standard errors,
        p-value); default 32.  For a stream of unknown length: between ``n_blocks`` and
        ``2·n_blocks`` blocks of equal size.
""",
    "chunk_rows": """\
    chunk_rows : int, optional
        Rows per kernel call and per file read for streamed input (default 65,536); bounds the
        memory of one call.
""",
    "progress": """\
    progress : bool or None
        Progress bar (tqdm) on standard error; None shows one for streamed or distributed work
        when standard error is a terminal.
""",
    "out_dir": """\
    out_dir : str, optional
        Folder of the generated kernel modules (default:
        :func:`dynosed_sym.codegen.default_output_dir`).
""",
    "backend": """\
    backend : {None, "local", "dask"}
        Where the work runs.  None: on Dask workers for a dask array (or when ``client`` is
        given), in this process otherwise.
""",
    "client": """\
    client : distributed.Client, optional
        Cluster for the Dask backend (default: the current default client, else Dask's local
        scheduler).
""",
    "n_groups": """\
    n_groups : int, optional
        Dask backend of :func:`~dynosed_sym.simulate`: tasks the chains are split into (default:
        twice the number of workers).  The fits split their data by ``chunk_rows`` instead.
""",
}

_MARK = "    <execution options>\n"


def out_dir_path(value, name):
    """A folder of generated kernels given by the user (``out_dir=``): its path as str with "~"
    expanded (:func:`~dynosed_sym.arguments.folder_path`), an empty or blank string refused
    (``out_dir=""`` is false, and the kernels went to the default folder without a word)."""
    path = arguments.folder_path(value, name)
    if not path.strip():
        raise arguments.DataError(
            f"{name}={path!r} is an empty or blank string, not a folder (an empty one was "
            "taken as 'not given': the kernels went to the default folder); pass out_dir='.' "
            "for the working directory, or None (or leave it out) for the default folder "
            "(docs/generated-code.md)"
        )
    return path


def execution_doc(*names):
    """Decorator: put the :data:`EXECUTION_DOC` entries of ``names`` (default: all) where a
    docstring says ``<execution options>``."""

    def decorate(func):
        keys = names or tuple(EXECUTION_DOC)
        if func.__doc__ and _MARK in func.__doc__:
            func.__doc__ = func.__doc__.replace(_MARK, "".join(EXECUTION_DOC[k] for k in keys))
        return func

    return decorate


@dataclass(frozen=True)
class Execution:
    """How a call runs, checked when built: see :data:`EXECUTION_DOC` for each field.

    Passed whole as ``execution=Execution(...)`` to the fits; ``chunk_rows=None`` means
    :data:`CHUNK_ROWS`.

    Examples
    --------
    >>> Execution(n_blocks=16, progress=False)
    Execution(n_blocks=16, chunk_rows=65536, progress=False, out_dir=None, backend=None,
              client=None, n_groups=None)
    >>> Execution(backend="ray")
    Traceback (most recent call last):
    ...
    dynosed_sym.errors.DataError: Execution.backend must be one of None, 'local', 'dask', got 'ray'
    """

    n_blocks: int = DEFAULT_BLOCKS
    chunk_rows: int | None = CHUNK_ROWS
    progress: bool | None = None
    out_dir: str | None = None
    backend: str | None = None
    client: object = None
    n_groups: int | None = None

    def __post_init__(self):
        if arguments.check_field(self, "n_blocks", arguments.integer) < 0:
            raise arguments.DataError(
                f"Execution.n_blocks must be at least 0, got {self.n_blocks}: {_BLOCKS_RULE}"
            )
        if self.chunk_rows is None:
            object.__setattr__(self, "chunk_rows", CHUNK_ROWS)
        arguments.check_field(self, "chunk_rows", arguments.integer, minimum=1)
        arguments.check_field(self, "backend", arguments.choice, allowed=BACKENDS)
        if self.progress is not None:
            arguments.check_field(self, "progress", arguments.flag)
        if self.n_groups is not None:
            arguments.check_field(self, "n_groups", arguments.integer, minimum=1)
        if self.out_dir is not None:
            arguments.check_field(self, "out_dir", out_dir_path)

    def at_least(self, min_blocks, entry):
        """This object, or a DataError when it has fewer than ``min_blocks`` noise blocks for
        ``entry`` (the function named in the message)."""
        if self.n_blocks < min_blocks:
            raise arguments.DataError(
                f"Execution.n_blocks must be at least {min_blocks} for {entry}, got "
                f"{self.n_blocks}: {_BLOCKS_RULE}"
            )
        return self

    def in_process(self, entry):
        """This object, or a DataError when it asks for a Dask backend ``entry`` does not have."""
        if self.backend is not None or self.client is not None:
            raise arguments.DataError(
                f"{entry} runs in this process: Execution.backend and Execution.client must be "
                f"None, got backend={self.backend!r}, client={self.client!r}"
            )
        return self

    @classmethod
    def resolve(
        cls,
        *,
        n_blocks=DEFAULT_BLOCKS,
        chunk_rows=None,
        progress=None,
        out_dir=None,
        backend=None,
        client=None,
        min_blocks=1,
    ) -> Execution:
        """Validate the options (a DataError names the argument) → :class:`Execution`."""
        n_blocks = arguments.integer(n_blocks, "n_blocks", minimum=min_blocks)
        chunk_rows = arguments.integer(
            CHUNK_ROWS if chunk_rows is None else chunk_rows, "chunk_rows", minimum=1
        )
        arguments.choice(backend, "backend", BACKENDS)
        if progress is not None and not isinstance(progress, bool):
            raise arguments.DataError(f"progress must be True, False or None, got {progress!r}")
        return cls(n_blocks, chunk_rows, progress, out_dir, backend, client)

    @property
    def dask_requested(self) -> bool:
        """``backend="dask"``, or a client given without ``backend="local"``."""
        return self.backend == "dask" or (self.client is not None and self.backend is None)


def option(value, cls, name):
    """The option object passed as keyword ``name``: ``cls()`` (the defaults) for None, ``value``
    itself if it is a ``cls``; anything else is refused with a DataError naming the keyword and
    the class to build."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    fields = ", ".join(f"{k}={v!r}" for k, v in value.items()) if isinstance(value, dict) else "..."
    raise arguments.DataError(
        f"{name} must be a {cls.__module__}.{cls.__name__} or None, got "
        f"{type(value).__name__} {value!r:.60}; build one: {name}={cls.__name__}({fields})"
    )


def moved_to(target, cls, *names):
    """``{name: (target, cls, name)}``: the flat keywords ``names`` are fields of ``cls``, passed
    as keyword ``target`` (the table of :func:`moved_keywords`)."""
    return {name: (target, cls, name) for name in names}


def _grouped(entry, keywords, moved):
    """``{option keyword: (class, {field: value})}`` of flat ``keywords`` (a TypeError for one
    that is not in ``moved``)."""
    unknown = sorted(k for k in keywords if k not in moved)
    if unknown:
        raise TypeError(f"{entry}() got an unexpected keyword argument {unknown[0]!r}")
    fields = {}
    for old, value in keywords.items():
        target, cls, name = moved[old]
        fields.setdefault(target, (cls, {}))[1][name] = value
    return fields


def option_objects(entry, keywords, moved):
    """``{option keyword: object}`` built from flat ``keywords`` (``{"seed": 0, "lam": 1e-6}``)
    by the table ``moved`` of the entry point, without a warning: for applications that read
    flat settings (a JSON table, command-line flags) and pass the entry point its objects."""
    return {
        target: cls(**values) for target, (cls, values) in _grouped(entry, keywords, moved).items()
    }


def moved_keywords(entry, keywords, given, moved, stacklevel=3):
    """Fold flat keywords that moved into option objects into those objects.

    Parameters
    ----------
    entry : str
        The entry point's name, for messages.
    keywords : dict
        The extra keywords the entry point received (its ``**moved``).
    given : dict
        ``{keyword: value as passed}`` of the entry point's option objects (None when not given).
    moved : dict
        ``{old keyword: (option keyword, option class, field)}``.

    Returns
    -------
    dict
        ``given`` with each option that received old keywords replaced by the object they build
        (a :class:`FutureWarning` names the new spelling).  An unknown keyword is a TypeError, an
        old keyword next to its option object a DataError.
    """
    fields = _grouped(entry, keywords, moved)
    if not keywords:
        return dict(given)
    out = dict(given)
    spelled = []
    for target, (cls, values) in fields.items():
        if given[target] is not None:
            raise arguments.DataError(
                f"{entry}: {', '.join(sorted(values))} given both as keywords and through "
                f"{target}=; set them in {target}={cls.__name__}(...) only"
            )
        out[target] = cls(**values)
        shown = ", ".join(f"{k}={v!r:.30}" for k, v in values.items())
        spelled.append(f"{target}={cls.__name__}({shown})")
    warnings.warn(
        FutureWarning(
            f"{entry}: the keywords {', '.join(sorted(keywords))} are fields of option objects "
            f"now and will be refused in a later version; pass {', '.join(spelled)}"
        ),
        stacklevel=stacklevel,
    )
    return out


def resolve_options(entry, keywords, given, moved):
    """The option objects of an entry point: the flat ``keywords`` of earlier versions folded in
    (:func:`moved_keywords`, warning at the entry point's caller), then each resolved by
    :func:`option`.

    ``given`` is ``{keyword: (value as passed, option class)}``; returns ``{keyword: object}``.
    A string passed as ``solver=`` is the ``method`` of earlier versions' ``solver="gradient"``.
    """
    keywords = dict(keywords)
    if isinstance(given.get("solver", (None,))[0], str):
        keywords["method"] = given["solver"][0]
        given = {**given, "solver": (None, given["solver"][1])}
    values = {name: value for name, (value, _) in given.items()}
    values = moved_keywords(entry, keywords, values, moved, stacklevel=4)
    return {name: option(values[name], cls, name) for name, (_, cls) in given.items()}
