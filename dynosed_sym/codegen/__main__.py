from .emit import _main

_main()
