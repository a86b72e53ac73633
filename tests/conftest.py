"""Shared fixtures and the figures report printed at the end of every run.

Tests that check many operations (state machines, threaded runs, linearizability) add their
counts with ``figures.add(name, n)``; the totals are printed in pytest's terminal summary so
that CI output says how much was checked, not only that it passed.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict

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
