"""Checks a command makes before it spends any time: that an output folder can be written.

Each check returns why it fails (a phrase to put after the path) or None, so that the
argument parsers turn it into a one-line usage error naming the option.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["dir_problem", "file_problem"]


def dir_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be an output folder (it is created when missing), or None.

    The test is a real one: a folder is created (and removed) in ``path``, or in its nearest
    existing parent when ``path`` does not exist yet. Permission bits alone would not do:
    they do not stop root, and ``/proc`` or a read-only mount refuse new folders whatever
    the bits say.
    """
    target = Path(os.path.abspath(path))
    if target.exists() and not target.is_dir():
        return "exists and is not a directory"
    why = _obstacle(target)
    if why is None:
        return None
    if target.exists():
        return f"is not writable: it {why[1]}"
    return f"cannot be created: {why[0]} {why[1]}"


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be an output file (its folder is created when missing), or None."""
    target = Path(os.path.abspath(path))
    if target.is_dir():
        return "is a directory"
    why = _obstacle(target.parent)
    return f"cannot be written: {why[0]} {why[1]}" if why else None


def _obstacle(folder: Path) -> tuple[Path, str] | None:
    """What stops a new entry in ``folder`` (absolute) or in its nearest existing parent:
    that folder, and a phrase saying why."""
    base = next(p for p in (folder, *folder.parents) if p.exists())  # "/" exists
    if not base.is_dir():
        return base, "is not a directory"
    try:
        probe = tempfile.mkdtemp(prefix=".cstrie-write-test-", dir=base)
    except OSError as exc:
        return base, f"does not take a new folder ({exc.strerror or exc})"
    os.rmdir(probe)
    return None
