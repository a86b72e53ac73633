"""The public types hold: ``mypy --strict`` on ``tests/typing_cases.py`` finds exactly the
errors that file marks.

``typing_cases.py`` is never run. Each of its lines that must be a type error ends in
``# E: <error code> "<part of the message>"``; this test runs mypy on it (with the project's
``[tool.mypy]`` settings, which bring the cereggii stubs) and fails on a marked line without
its error -- say, ``CSTrie("natz")`` accepted because ``dialect=`` was widened back to
``str`` -- and on an error on an unmarked line (an ``assert_type`` that no longer holds,
``lookup`` no longer a ``frozenset[str]`` on a ``CSTrie[str]``). mypy is in the ``typecheck``
extra, which ``make venv`` installs; without it the test is skipped.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "typing_cases.py"

# `# E: arg-type "Literal['natz']"` at the end of a line.
MARK = re.compile(r'#\s*E:\s*(?P<code>[a-z-]+)(?:\s+"(?P<part>.*)")?\s*$')
# `tests/typing_cases.py:25: error: Argument 1 to ... [arg-type]`
ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<msg>.*?)\s+\[(?P<code>[a-z-]+)\]$")


def expected_errors() -> dict[int, tuple[str, str]]:
    """Line -> (error code, part of the message) for every marked line of the cases."""
    marks = {}
    for n, line in enumerate(CASES.read_text().splitlines(), start=1):
        m = MARK.search(line)
        if m:
            marks[n] = (m["code"], m["part"] or "")
    return marks


def run_mypy() -> tuple[str, dict[int, list[tuple[str, str]]]]:
    """mypy's whole output and, by line of the cases, its errors (code, message)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--no-pretty", "--show-error-codes", "--config-file", str(ROOT / "pyproject.toml"),
         str(CASES.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    out = proc.stdout + proc.stderr
    # 0: no error, 1: errors found; anything else is mypy failing to run.
    assert proc.returncode in (0, 1), f"mypy failed to run (exit {proc.returncode}):\n{out}"
    errors: dict[int, list[tuple[str, str]]] = {}
    for line in proc.stdout.splitlines():
        m = ERROR.match(line)
        if m is None:
            continue
        assert Path(m["file"]) == CASES.relative_to(ROOT), (
            f"mypy reports an error outside the cases (the package must stay clean):\n{line}")
        errors.setdefault(int(m["line"]), []).append((m["code"], m["msg"]))
    return out, errors


def test_mypy_finds_exactly_the_marked_errors(figures):
    pytest.importorskip("mypy", reason="mypy is in the typecheck extra (make venv installs it)")
    marks = expected_errors()
    assert len(marks) >= 10, "the cases file lost its marks"
    out, errors = run_mypy()
    problems = []
    for n, (code, part) in sorted(marks.items()):
        got = errors.get(n, [])
        if not any(c == code and part in msg for c, msg in got):
            problems.append(f"line {n}: expected [{code}] containing {part!r}, got "
                            f"{got or 'no error'}")
    for n, got in sorted(errors.items()):
        if n not in marks:
            problems.append(f"line {n}: unexpected {got}")
    source = CASES.read_text().splitlines()
    assert not problems, "\n".join(
        f"{p}\n    {source[int(p.split(':')[0].split()[1]) - 1].strip()}" for p in problems
    ) + f"\n\nmypy said:\n{out}"
    figures.add("typing: rejected lines (mypy --strict)", len(marks))
    figures.add("typing: assert_type checks (mypy --strict)",
                sum("assert_type(" in line for line in source))
