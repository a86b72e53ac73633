"""Shared fixtures and the figures report printed at the end of every run.

Tests that check many operations (state machines, threaded runs, linearizability) add their
counts with ``figures.add(name, n)``; the totals are printed in pytest's terminal summary so
that CI output says how much was checked, not only that it passed. With
``CSTRIE_FIGURES_OUT=FILE`` (``make test`` sets it) the totals are also written to ``FILE`` as
JSON, with the interpreter and the outcome, for the paper's correctness section.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import sysconfig
import threading
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import pytest


class Figures:
    """A thread-safe tally of named counts, printed at the end of the run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n


FIGURES = Figures()


@pytest.fixture(scope="session")
def figures() -> Figures:
    return FIGURES


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    if not FIGURES.counts:
        return
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    terminalreporter.section(
        f"figures checked (Python {sys.version.split()[0]}, GIL {'on' if gil else 'off'})"
    )
    width = max(len(k) for k in FIGURES.counts)
    for name in sorted(FIGURES.counts):
        terminalreporter.write_line(f"{name:<{width}}  {FIGURES.counts[name]:>12,}")


def pytest_sessionfinish(session, exitstatus):
    """Write the figures to ``$CSTRIE_FIGURES_OUT`` when that is set (see the module doc)."""
    target = os.environ.get("CSTRIE_FIGURES_OUT")
    if not target or not FIGURES.counts:
        return
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    report = {
        "python": platform.python_version(),
        "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
        "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "cpu_count": os.cpu_count(),
        "git_commit": commit,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tests_collected": session.testscollected,
        "tests_failed": session.testsfailed,
        "exit_status": int(exitstatus),
        "environment": {k: v for k, v in os.environ.items() if k.startswith("CSTRIE_")
                        and k != "CSTRIE_FIGURES_OUT"},
        "figures": dict(sorted(FIGURES.counts.items())),
    }
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


def _set_double_read(monkeypatch, on: bool) -> None:
    """Whether the trie reads each replaceable reference twice (ctrie._atomic), whatever the
    build: the flag where every module that reads it holds it. The records' batched reads
    (``cstrie._get``, ``AtomicRef.get`` itself) call ``get()`` instead, so that the tests'
    stand-ins for a reference serve there too."""
    import ctrie._atomic as atomic
    import ctrie.cstrie as cstrie_module
    import ctrie.gcas as gcas_module

    monkeypatch.setattr(atomic, "FREE_THREADED_BUILD", on)
    monkeypatch.setattr(cstrie_module, "_FT", on)
    monkeypatch.setattr(gcas_module, "_FT", on)
    monkeypatch.setattr(cstrie_module, "_get", lambda r: r.get())


@pytest.fixture
def one_get_per_read(monkeypatch, request):
    """For tests whose stand-ins for an AtomicRef count the ``get()`` calls a walk makes, or
    act on the n-th one: a free-threaded build reads every reference twice (ctrie._atomic),
    which would shift their counts. Here each read is one ``get()`` again, as on the GIL
    build; tests/test_atomic_read.py tests the second read itself. A test of such a module
    that runs real threads is marked ``real_reads`` and keeps the build's reads."""
    if request.node.get_closest_marker("real_reads"):
        return
    _set_double_read(monkeypatch, False)


@pytest.fixture
def double_read(monkeypatch):
    """The free-threaded build's reads, on any build (tests/test_atomic_read.py)."""
    _set_double_read(monkeypatch, True)
