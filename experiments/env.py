"""The metadata every record carries, and where result files go.

A *build* is one interpreter configuration (version, GIL or free-threaded); its results go
to ``<root>/<version>-<gil|ft>/``. A *run* is one invocation of the harness: it has a
``run_id`` (UTC time plus a random suffix) that every record carries, so that ratios can be
taken between cells of one run. Files are never overwritten: a run writes new files named
after its ``run_id`` (and opens them in exclusive-create mode); only its own run file
``run-<run_id>.json`` is rewritten, once, when the run ends, to say how it ended
(``status``: ``running`` until then, ``complete``, ``interrupted`` or ``failed``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import secrets
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .config import Size
from .text import count
from .writing import writing

__all__ = [
    "PROJECT_ROOT",
    "RECORD_FIELDS",
    "Run",
    "build_info",
    "build_tag",
    "default_results_root",
    "paper_build_dir",
]

#: The checkout that holds the package (``experiments/``'s parent).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: Fields every record has, in the order they are written.
RECORD_FIELDS = (
    "experiment", "algorithm", "dialect", "workload", "params", "threads", "seed", "rounds",
    "median", "min", "max", "unit", "python", "implementation", "gil_enabled",
    "free_threaded_build", "cpu_count", "package_version", "git_commit", "git_dirty",
    "code_hash", "timestamp", "loadavg_1m", "run_id", "build", "size", "status", "note",
    "values",
)


def _in_project() -> bool:
    return (PROJECT_ROOT / "pyproject.toml").is_file()


def default_results_root() -> Path:
    """``results/`` of the checkout (git-ignored), or of the working directory if installed."""
    return (PROJECT_ROOT if _in_project() else Path.cwd()) / "results"


def paper_build_dir(results_root: Path) -> Path:
    """Where the figures and the paper drawn from ``results_root`` go by default:
    ``<results_root>/paper/`` (the paper at its top, the figures in ``figures/`` beside it, as
    the paper links them). The committed ``paper/`` changes only through ``publish``."""
    return Path(results_root) / "paper"


def _code_hash() -> str:
    """SHA-256 (first 12 hex digits) of the package sources: identifies the code measured
    even when the working tree is dirty and ``git_commit`` alone does not."""
    h = hashlib.sha256()
    for folder in ("ctrie", "baselines", "experiments"):
        for path in sorted((PROJECT_ROOT / folder).glob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args],
            capture_output=True, text=True, timeout=10, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


@functools.cache
def build_info() -> dict[str, Any]:
    """The interpreter, machine and code version that every record carries."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            package_version = version("cstrie")
        except PackageNotFoundError:
            package_version = "unknown (not installed)"
    except ImportError:  # pragma: no cover - importlib.metadata is stdlib since 3.8
        package_version = "unknown"
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    gil_check = getattr(sys, "_is_gil_enabled", None)
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "gil_enabled": bool(gil_check()) if gil_check is not None else True,
        "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "cpu_count": os.cpu_count(),
        "package_version": package_version,
        "git_commit": commit or "unknown",
        "git_dirty": (bool(status) if status is not None else None),
        "code_hash": _code_hash(),
    }


def build_tag(info: dict[str, Any] | None = None) -> str:
    """``<version>-gil``, ``<version>-ft``, or ``<version>-ft-gil`` (free-threaded build with
    the GIL switched back on, e.g. ``PYTHON_GIL=1`` or by an extension module)."""
    info = info or build_info()
    if not info["free_threaded_build"]:
        kind = "gil"
    else:
        kind = "ft" if not info["gil_enabled"] else "ft-gil"
    return f"{info['python']}-{kind}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _loadavg() -> float | None:
    """The 1-minute load average when the record is written (``None`` where the OS has none).

    On a 2-core machine anything above 2 means runnable work was waiting for a core; a record
    measured then says so.
    """
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


#: Which cells an experiment measures, where that changed without any option changing: kept
#: in every run file, so that a time estimate never comes from a run with other cells
#: (experiments.estimate.WORK). ``scaling`` measures each cell shared and owner-built since
#: e9c0b16, twice the work of earlier runs.
CELL_LAYOUTS = {"scaling_layout": "shared+own"}


class Run:
    """One invocation of the harness: its id, seed, size and the files it writes."""

    def __init__(self, out_root: Path, seed: int, size: Size, argv: list[str],
                 plan: dict[str, Any] | None = None) -> None:
        """``plan``: what the run sets out to measure (``experiments``, ``algorithms``,
        ``dialects``), kept in its run file so that a figure can say which cells are
        missing."""
        self.seed = seed
        self.size = size
        self.info = build_info()
        self.build = build_tag(self.info)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.run_id = f"{stamp}-{secrets.token_hex(2)}"
        self.dir = Path(out_root).resolve() / self.build
        with writing(self.dir, "create the folder"):
            self.dir.mkdir(parents=True, exist_ok=True)
        self.files: list[Path] = []
        self._open: dict[str, IO[str]] = {}
        self.counts: dict[str, int] = {}
        #: ``running`` until :meth:`finish` says how it ended.
        self.status = "running"
        manifest = {
            "run_id": self.run_id, "argv": argv, "seed": seed, "size": size.as_params(),
            **(plan or {}), **CELL_LAYOUTS,
            "executable": sys.executable, "sys_version": sys.version, "started": _now(),
            "loadavg_1m": _loadavg(),
            **self.info,
            "status": "running",
        }
        #: The run file: what was asked for, on which build (``run-<run_id>.json``).
        self.manifest = self.new_path("run", ".json")
        with writing(self.manifest):
            self.manifest.write_text(json.dumps(manifest, indent=2) + "\n")

    def _rewrite_manifest(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Apply ``change`` to the run file's contents and replace the file in one step."""
        data = json.loads(self.manifest.read_text())
        change(data)
        tmp = self.manifest.with_name(self.manifest.name + ".tmp")
        with writing(self.manifest):
            tmp.write_text(json.dumps(data, indent=2) + "\n")
            os.replace(tmp, self.manifest)

    def step_done(self, experiment: str, seconds: float) -> None:
        """Note in the run file how long ``experiment`` took (the next run's estimate)."""
        self._rewrite_manifest(
            lambda d: d.setdefault("seconds", {}).__setitem__(experiment, round(seconds, 1)))

    def new_path(self, stem: str, suffix: str, subdir: str | None = None) -> Path:
        """A path named after the run that does not exist yet (``stem-<run_id>[-n]suffix``)."""
        folder = self.dir / subdir if subdir else self.dir
        with writing(folder, "create the folder"):
            folder.mkdir(parents=True, exist_ok=True)
        n = 0
        while True:
            tail = f"-{n}" if n else ""
            path = folder / f"{stem}-{self.run_id}{tail}{suffix}"
            if not path.exists():
                self.files.append(path)
                return path
            n += 1

    def record(
        self,
        experiment: str,
        algorithm: str,
        dialect: str | None,
        workload: str,
        params: dict[str, Any],
        *,
        threads: int = 1,
        values: list[float] | None = None,
        unit: str,
        status: str = "ok",
        note: str | None = None,
        rounds: int | None = None,
    ) -> dict[str, Any]:
        """Write one JSON-lines record to ``<experiment>-<run_id>.jsonl`` and return it.

        ``values`` are the per-round (or per-value) measurements; median, min and max are
        computed from them. A cell that was not measured has ``status`` ``"skipped"`` or
        ``"failed"``, no values and a ``note`` saying why.
        """
        vals = sorted(values or [])
        median: float | None
        lo: float | None
        hi: float | None
        if vals:
            mid = len(vals) // 2
            median = vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
            lo, hi = vals[0], vals[-1]
        else:
            median = lo = hi = None
        rec = {
            "experiment": experiment, "algorithm": algorithm, "dialect": dialect,
            "workload": workload, "params": params, "threads": threads, "seed": self.seed,
            "rounds": rounds if rounds is not None else len(vals),
            "median": median, "min": lo, "max": hi, "unit": unit,
            **self.info,
            "timestamp": _now(), "loadavg_1m": _loadavg(), "run_id": self.run_id, "build": self.build,
            "size": self.size.name, "status": status, "note": note,
            "values": list(values or []),
        }
        fh = self._open.get(experiment)
        if fh is None:
            path = self.new_path(experiment, ".jsonl")
            with writing(path):
                fh = self._open[experiment] = open(path, "x", encoding="utf-8")
        with writing(fh.name):
            fh.write(json.dumps(rec, sort_keys=False) + "\n")
            fh.flush()
        self.counts[experiment] = self.counts.get(experiment, 0) + 1
        return rec

    def close(self) -> None:
        """Close the record files."""
        for fh in self._open.values():
            fh.close()
        self._open.clear()

    def finish(self, status: str, experiment: str | None = None, **detail: Any) -> None:
        """Close the record files and write how the run ended into its run file: ``status``
        (``complete``, ``interrupted`` or ``failed``), when, and the records written per
        experiment; unless complete, also ``{status: {when, experiment, **detail}}`` (the
        experiment it stopped in, the signal or the error). Records already written stay."""
        self.close()
        now = _now()

        def ended(data: dict[str, Any]) -> None:
            data.update(status=status, finished=now, records=dict(self.counts))
            if status != "complete":
                data[status] = {"when": now, "experiment": experiment, **detail}

        self._rewrite_manifest(ended)
        self.status = status

    def report(self, out: IO[str] = sys.stdout) -> None:
        """Print where this run's files went."""
        ended = "" if self.status in ("running", "complete") else f", {self.status.upper()}"
        print(f"run {self.run_id} ({self.build}, size {self.size.name}, seed {self.seed}"
              f"{ended}):", file=out)
        for path in self.files:
            if path.exists():
                what = ""
                exp = path.name.split("-", 1)[0]
                if path.suffix == ".jsonl" and exp in self.counts:
                    what = f" ({count(self.counts[exp], 'record')})"
                print(f"  wrote {path}{what}", file=out)

