"""The optional dependencies: which module each extra of ``pyproject.toml`` brings, and the
one-line error a command gives when one it needs is missing.

Measuring needs only the standard library, ``cereggii`` and this package. Everything in
:data:`EXTRAS` is imported where it is used, never when ``python -m experiments`` starts,
so that a missing one costs only the command that needs it, with a line that says which
extra to install (``tests/test_cli.py`` checks every import of ``experiments/`` against
this table and the table against ``pyproject.toml``):

- ``bench``: pyperf (per-operation timing; the stdlib fallback otherwise), paho-mqtt
  (paho's matcher; its cells are recorded as skipped otherwise), tqdm (progress bars; plain
  lines otherwise);
- ``experiments`` (``bench`` and): matplotlib (``charts``), atomics (two cells of
  ``primitives``, skipped otherwise);
- ``pipeline``: pyspark, pyarrow, pandas and numpy (``pipeline generate|route|aggregate``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable

__all__ = ["DISTRIBUTIONS", "EXTRAS", "extra_of", "from_error", "missing"]

#: Extra -> the top-level modules it brings.
EXTRAS: dict[str, tuple[str, ...]] = {
    "bench": ("pyperf", "paho", "tqdm"),
    "experiments": ("matplotlib", "atomics"),
    "pipeline": ("pyspark", "pyarrow", "pandas", "numpy"),
}

#: Module -> the distribution that installs it, where the names differ.
DISTRIBUTIONS = {"paho": "paho-mqtt"}


def extra_of(module: str) -> str | None:
    """The extra that brings top-level ``module``, or None."""
    top = module.split(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def _message(what: str, module: str) -> str:
    return (f"{what} needs {module}, which {sys.executable} cannot import: "
            f"pip install 'cstrie[{extra_of(module)}]'")


def missing(what: str, modules: Iterable[str]) -> str | None:
    """The one-line error (without ``error:``) for the first of ``modules`` this
    interpreter cannot find, or None; nothing is imported."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return _message(what, module)
    return None


def from_error(what: str, exc: ImportError) -> str:
    """The one-line error for an ImportError raised while ``what`` ran: the extra to
    install when the module is one of an extra's, else the error as it is."""
    name = exc.name or ""
    return _message(what, name.split(".")[0]) if extra_of(name) else f"{what}: {exc}"
