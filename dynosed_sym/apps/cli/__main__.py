"""``python -m dynosed_sym.apps.cli``: the ``dynosed`` command."""

from . import main

main()
