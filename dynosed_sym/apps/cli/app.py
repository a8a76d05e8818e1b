"""The ``dynosed`` command group and its error handling (a package error: one line, exit 1)."""

from __future__ import annotations

import os
import sys

import click

from ...errors import DynosedError

DATA_SUFFIXES = (".npy", ".csv", ".parquet")


# --------------------------------------------------------------------------- error handling
class _Group(click.Group):
    """Turns the package's errors (and unreadable files) into a one-line message and exit 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:  # the reader went away (`dynosed fit ... | head`): not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(0) from None
        except (DynosedError, OSError, ValueError, ImportError) as exc:
            msg = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, DynosedError):
                msg = f"{type(exc).__name__}: {msg}"
            raise click.ClickException(msg) from None
        except Exception as exc:  # a bug, not a usage error: still one line unless asked for more
            if os.environ.get("DYNOSED_DEBUG"):
                raise
            msg = " ".join(str(exc).split())
            raise click.ClickException(
                f"unexpected {type(exc).__name__}: {msg} (set DYNOSED_DEBUG=1 for the traceback)"
            ) from None


# --------------------------------------------------------------------------- commands
@click.group(
    cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(package_name="dynosed_sym", prog_name="dynosed")
def main():
    """dynosed — identify SDE parameters from unordered snapshots.

    \b
    A typical session:
      dynosed check models/lorenz.py                 # can snapshots identify θ?
      dynosed simulate models/lorenz.py -n 5000 --out lorenz.csv
      dynosed fit models/lorenz.py lorenz.csv        # estimates, standard errors, freeness

    MODEL is a Python file that builds an SDEModel named `model` (see models/).
    """
