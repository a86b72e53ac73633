"""What every tool in ``tools/`` records beside its figures: interpreter, GIL state, CPU
count, load, and the commit of each source tree measured."""

from __future__ import annotations

import os
import subprocess
import sys


def commit(tree: str) -> str:
    """``git describe --always --dirty`` of ``tree`` ("unknown" outside a checkout)."""
    r = subprocess.run(["git", "-C", tree, "describe", "--always", "--dirty"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def environment(trees: list[str], **extra: object) -> dict:
    """The record's environment: interpreter, GIL, CPUs, 1-minute load, commits, ``extra``."""
    return {"python": sys.version.split()[0], "executable": sys.executable,
            "gil": getattr(sys, "_is_gil_enabled", lambda: True)(), "cpus": os.cpu_count(),
            "loadavg_1m": os.getloadavg()[0], "commits": {t: commit(t) for t in trees}, **extra}


def headline(env: dict) -> str:
    return (f"Python {env['python']} ({env['executable']}), GIL {'on' if env['gil'] else 'off'}, "
            f"{env['cpus']} CPUs, load {env['loadavg_1m']:.2f}")
