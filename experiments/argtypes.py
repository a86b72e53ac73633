"""The command line's argument types: each turns one option's text into a value or raises
``argparse.ArgumentTypeError`` with a message that names the rule it broke (argparse prints
it as a usage error, exit 2, before anything runs)."""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .preflight import dir_problem, file_problem, probe_python
from .rerun import child_env

__all__ = ["FOUND_PYTHONS", "choices_list", "existing_dir", "existing_file", "int_list",
           "out_dir", "out_file", "positive_int", "python_arg", "seed_arg", "share_list"]

#: What the ``--python`` check found each interpreter to be (its version and GIL state).
FOUND_PYTHONS: dict[str, str] = {}


def seed_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def choices_list(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(
                f"must be a comma-separated list of {', '.join(allowed)}; got an empty list")
        bad = [t for t in items if t not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(map(repr, bad))}; choose from {', '.join(allowed)}")
        return list(dict.fromkeys(items))
    return parse


def int_list(text: str) -> list[int]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        values = [int(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of positive integers, got {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of positive integers, got {text!r}")
    return sorted(set(values))


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def share_list(text: str) -> list[float]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        values = [float(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of write shares between 0 and 1, got {text!r}")
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of write shares between 0 and 1, got {text!r}")
    return sorted(set(values))


def python_arg(text: str) -> str:
    """An interpreter that runs as a Python and imports this package (asked, not assumed:
    ``/bin/true`` is an executable file too). A name without a slash (``python3.13t``) is
    looked up on PATH, as a shell does; the value is then the path found."""
    if text and os.sep not in text and (os.altsep is None or os.altsep not in text):
        found = shutil.which(text)
        if found is None:
            raise argparse.ArgumentTypeError(f"{text!r} not found on PATH (give a Python "
                                             "executable's name on PATH, or its path)")
        text = found
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist (give a Python executable)")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not an executable file")
    why, found = probe_python(text, child_env())
    if why:
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    FOUND_PYTHONS[text] = found
    return text


def _not_empty(text: str, what: str) -> None:
    """An empty path would be the working directory (``Path("")`` is ``.``): refused."""
    if not text:
        raise argparse.ArgumentTypeError(f"must not be empty (give a {what}; '.' is the "
                                         "working directory)")


def existing_dir(text: str) -> Path:
    _not_empty(text, "folder")
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory of results")
    return path


def existing_file(text: str) -> Path:
    _not_empty(text, "file")
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file")
    return Path(text)


def out_dir(text: str) -> Path:
    """An output folder that exists and takes new files, or that can be created."""
    _not_empty(text, "folder")
    why = dir_problem(text)
    if why:
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    return Path(text)


def out_file(text: str) -> Path:
    """An output file whose folder exists and takes new files, or can be created."""
    _not_empty(text, "file")
    why = file_problem(text)
    if why:
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    return Path(text)
