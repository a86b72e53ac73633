"""Checks a command makes before it spends any time: that an output folder can be written,
and that a ``--python`` interpreter runs this package.

Each check returns why it fails (a phrase to put after the path) or None, so that the
argument parsers turn it into a one-line usage error naming the option.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PYTHON_PROBE_TIMEOUT", "dir_problem", "file_problem", "probe_python"]

#: Seconds a ``--python`` interpreter may take to import the package and answer.
PYTHON_PROBE_TIMEOUT = 60.0


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


# The probe runs in the interpreter given: it imports what a measuring run imports and says
# which build it is.
_PROBE = """\
import json, platform, sys, sysconfig
import baselines, ctrie, experiments.cli
gil = getattr(sys, "_is_gil_enabled", lambda: True)()
print(json.dumps({"version": platform.python_version(), "executable": sys.executable,
                  "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                  "gil_enabled": bool(gil)}))
"""


def probe_python(python: str, env: dict[str, str], timeout: float = PYTHON_PROBE_TIMEOUT
                 ) -> tuple[str | None, str]:
    """Run ``python`` as a Python that imports this package (with ``env``, as the re-run
    will). Return ``(None, "Python 3.13.5, free-threaded build, GIL disabled")``, or
    ``(why not, "")``."""
    try:
        # -P: a folder experiments/ in the working directory is not this package.
        proc = subprocess.run([python, "-P", "-c", _PROBE], env=env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return f"cannot be run ({exc.strerror or exc})", ""
    except subprocess.TimeoutExpired:
        return f"did not answer within {timeout:.0f} s as a Python", ""
    lines = proc.stdout.strip().splitlines()
    try:
        info = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        info = None
    if proc.returncode != 0 or not isinstance(info, dict):
        err = [x for x in proc.stderr.strip().splitlines() if x.strip()]
        if proc.returncode and err and "Error" in err[-1]:
            return (f"cannot import this package: {err[-1].strip()} (install cstrie into "
                    "that interpreter, or pick another --python)"), ""
        said = f"; it said {err[-1].strip()!r}" if err else ""
        return (f"is not a Python that runs this package (`{python} -c ...` exited "
                f"{proc.returncode} and printed no answer{said})"), ""
    kind = ("GIL build" if not info.get("free_threaded") else
            "free-threaded build, GIL " + ("enabled" if info.get("gil_enabled") else "disabled"))
    return None, f"Python {info.get('version')}, {kind}"
