"""Writing a command's files: a write that fails is one line naming the path and what failed.

The argument types check an output folder before anything runs (:mod:`experiments.preflight`),
but a folder inside it (a build's ``<version>-<gil|ft>/``, ``paper/``) or a file in it can
still refuse a write. Every file and folder the command line writes goes through
:func:`writing`, which turns the ``OSError`` of a failed write into a :class:`WriteError`;
``experiments.cli.main`` prints it as ``error: <command>: cannot write PATH: <reason>`` and
exits with status 2, as a usage error does. :func:`write_all` checks every file of a set
before it writes the first, so that a refusal leaves the folder as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .preflight import file_problem

__all__ = ["WriteError", "write_all", "write_problem", "writing"]


class WriteError(Exception):
    """A file or folder of the command's output could not be written (the message, one
    line, names it and says why)."""


@contextmanager
def writing(path: str | os.PathLike[str], what: str = "write") -> Iterator[None]:
    """Run the block; an ``OSError`` in it becomes a :class:`WriteError` saying ``cannot
    <what> <path>: <reason>`` (the path the system names, if it names one)."""
    try:
        yield
    except OSError as exc:
        where = exc.filename if exc.filename is not None else path
        raise WriteError(f"cannot {what} {where}: {exc.strerror or exc}") from exc


def write_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be written (a phrase after the path), or None: a folder there,
    a file there that this process may not write, or a folder that takes no new file."""
    target = Path(path)
    if target.exists() and not target.is_dir() and not os.access(target, os.W_OK):
        return "cannot be written: Permission denied"
    return file_problem(target)


def write_all(files: Mapping[Path, str | bytes]) -> list[Path]:
    """Write every ``path: text`` of ``files`` (creating their folders), having checked
    them all first: a path that cannot be written raises :class:`WriteError` before any
    file changes. Return the paths."""
    for path in files:
        why = write_problem(path)
        if why:
            raise WriteError(f"{path} {why}")
    for path, text in files.items():
        with writing(path.parent, "create the folder"):
            path.parent.mkdir(parents=True, exist_ok=True)
        with writing(path):
            if isinstance(text, bytes):
                path.write_bytes(text)
            else:
                path.write_text(text)
    return list(files)
