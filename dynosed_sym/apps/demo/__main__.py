"""``python -m dynosed_sym.apps.demo``: the package's main job on the bundled models."""

from .run import main

main()
