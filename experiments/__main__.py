"""``python -m experiments``: see :mod:`experiments.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
