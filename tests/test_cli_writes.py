"""What the command line does when a file or folder it writes cannot be written inside a
valid ``--out`` (or ``--from``, for the commands that write beside the records): one line
``error: <command>: cannot ... <path>: <why>``, exit status 2, no traceback, and nothing
written (the folder holds what it held before).

Two ways to block a write: ``read-only`` (the folder made ``0o500``; skipped where modes do
not stop this process: root with CAP_DAC_OVERRIDE, as a usual root is) and ``in-the-way`` (a
file where a folder goes, or a folder where a file goes; that stops root too).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from experiments.env import build_tag
from test_experiments_smoke import ROOT, cli

EXAMPLE = ROOT / "examples" / "nats-inbox"
COMPARE = ("compare", "--subscriptions", str(EXAMPLE / "subscriptions.txt"), "--topics",
           str(EXAMPLE / "topics.txt"), "--algorithms", "cstrie", "--baseline", "cstrie",
           "--rounds", "1", "--ops", "20", "--threads", "1", "--write-shares", "0")

#: command -> (its arguments, {blocker: the path to block, relative to the results root, or
#: (that path, what to make there: "file" or "dir"; a path alone is a folder)}).
CASES = {
    "primitives": (("primitives", "--smoke", "--method", "timeit", "--out", "{root}"),
                   {"read-only": "{build}", "in-the-way": ("{build}", "file")}),
    "compare": ((*COMPARE, "--out", "{root}"),
                {"read-only": "{build}", "in-the-way": ("{build}", "file")}),
    "summary": (("summary", "--from", "{root}"),
                {"read-only": ".", "in-the-way": ("summary-latest.md", "dir")}),
    "charts": (("charts", "--from", "{root}"),
               {"read-only": "paper", "in-the-way": ("paper", "file")}),
    "paper": (("paper", "--from", "{root}"),
              {"read-only": ("paper/paper.md", "file"), "in-the-way": ("paper/paper.md", "dir")}),
}


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results root holding one small run (what summary, charts and paper read)."""
    root = tmp_path_factory.mktemp("records") / "results"
    proc = cli("primitives", "--smoke", "--method", "timeit", "--out", str(root))
    assert proc.returncode == 0, proc.stderr
    return root


def _modes_apply(tmp: Path) -> bool:
    """Whether a folder of mode 0o500 stops this process from creating in it (it does not
    stop root, unless root runs without CAP_DAC_OVERRIDE; ``os.geteuid() == 0`` alone
    would skip that case too)."""
    probe = tmp / "modes-probe"
    probe.mkdir()
    probe.chmod(0o500)
    try:
        (probe / "x").mkdir()
    except PermissionError:
        return True
    finally:
        probe.chmod(stat.S_IRWXU)
    return False


def _tree(root: Path) -> dict[str, int]:
    """Every entry below ``root`` with its size (0 for a folder)."""
    return {str(p.relative_to(root)): (0 if p.is_dir() else p.stat().st_size)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("blocker", ["read-only", "in-the-way"])
@pytest.mark.parametrize("command", sorted(CASES))
def test_a_write_that_fails_is_a_one_line_error(command, blocker, records, tmp_path):
    if blocker == "read-only" and not _modes_apply(tmp_path):
        pytest.skip(f"permission bits do not stop this process (euid {os.geteuid()})")
    if command == "charts":
        pytest.importorskip("matplotlib")
    args, blockers = CASES[command]
    root = tmp_path / "results"  # (not tmp_path: the probe's folder is there)
    if command in ("summary", "charts", "paper"):
        shutil.copytree(records, root)
    else:
        root.mkdir()
    spec = blockers[blocker]
    rel, kind = (spec, "dir") if isinstance(spec, str) else spec
    target = root / rel.format(build=build_tag())
    if kind == "file":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("in the way\n")
    else:
        target.mkdir(parents=True, exist_ok=True)
    before = _tree(root)
    if blocker == "read-only":
        target.chmod(0o500)
    try:
        proc = cli(*[a.format(root=root) for a in args])
    finally:
        target.chmod(stat.S_IRWXU) if target.is_dir() else None
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    line = lines[-1]
    assert line.startswith("error: ") and str(root) in line, proc.stderr
    assert len(line) < 400, line
    assert _tree(root) == before, "the command wrote something although it failed"


@pytest.mark.parametrize("there", ["a-file", "an-example"])
def test_write_example_refuses_to_replace_what_is_there(there, tmp_path):
    """``compare --write-example NAME PATH``: a PATH that is a file, or a folder already
    holding the example's files, is refused in one line (nothing changed); ``--overwrite``
    (as ``pipeline generate`` has it) replaces the files of a folder."""
    path = tmp_path / "wl"
    if there == "a-file":
        path.write_text("mine\n")
    else:
        path.mkdir()
        (path / "subscriptions.txt").write_text("mine\n")
    before = _tree(tmp_path)
    proc = cli("compare", "--write-example", "nats-inbox", str(path))
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], lines
    assert _tree(tmp_path) == before
    proc = cli("compare", "--write-example", "nats-inbox", str(path), "--overwrite")
    if there == "a-file":
        assert proc.returncode == 2 and "not a directory" in proc.stderr, proc.stderr
        assert _tree(tmp_path) == before
    else:
        assert proc.returncode == 0, proc.stderr
        assert (path / "subscriptions.txt").read_bytes() == (
            EXAMPLE / "subscriptions.txt").read_bytes()


def test_a_pyperf_folder_that_cannot_be_made_is_a_one_line_error(tmp_path):
    """The pyperf subprocesses' folder (``<build>/pyperf/``) is made mid-run: a file there
    stopped every pyperf cell, recorded as failed, and the run exited 0 as if it had
    measured."""
    pytest.importorskip("pyperf")
    root = tmp_path / "results"
    (root / build_tag()).mkdir(parents=True)
    (root / build_tag() / "pyperf").write_text("in the way\n")
    proc = cli("primitives", "--smoke", "--method", "pyperf", "--out", str(root))
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("error: primitives: cannot ") and "pyperf" in line, proc.stderr


def test_charts_blocked_at_its_last_figure_writes_none(records, tmp_path):
    """charts writes one file per figure and format: a folder in the way of the last one
    stopped it after it had written (or replaced) every other figure; the files are now all
    checked before the first is drawn, as summary and paper check theirs."""
    pytest.importorskip("matplotlib")
    from experiments.report.charts import FIGURES

    root = tmp_path / "results"
    shutil.copytree(records, root)
    last = root / "paper" / "figures" / f"{list(FIGURES)[-1]}.svg"
    last.mkdir(parents=True)
    before = _tree(root)
    proc = cli("charts", "--from", str(root))
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("error: charts: ") and str(last) in line, proc.stderr
    assert _tree(root) == before, "charts wrote figures although it failed"
