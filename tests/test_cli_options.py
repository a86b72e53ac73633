"""Options that the command line took and then ignored or misread: an empty ``--out``,
``--write-example`` with workload files, options a command does not use (in its help and
on its command line), counts worded ``1 subscriptions``, ``--python`` given as a bare name,
and ``/dev/fd/N`` files (process substitution) handed to a ``--python`` re-run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.cli import MEASURES, build_parser
from experiments.compare_files import read_workload
from experiments.config import SIZES
from experiments.env import Run
from experiments.records import load
from test_experiments_smoke import ROOT

EXAMPLE = ROOT / "examples" / "nats-inbox"
SUBS, TOPICS = str(EXAMPLE / "subscriptions.txt"), str(EXAMPLE / "topics.txt")
TINY = ("--algorithms", "cstrie", "--baseline", "cstrie", "--rounds", "1", "--ops", "20",
        "--threads", "1", "--write-shares", "0")


def _run(cwd: Path, *args: str, path: str | None = None,
         pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess:
    """``python -m experiments *args`` in ``cwd`` (this checkout on PYTHONPATH)."""
    env = dict(os.environ, CSTRIE_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, pass_fds=pass_fds)


def _one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "error:" in line, proc.stderr
    for word in words:
        assert word in line, line
    return line


# --- an empty path is not the working directory ----------------------------------------------

@pytest.mark.parametrize("args, option", [
    (("memory", "--smoke", "--out", ""), "--out"),
    (("compare", "--subscriptions", SUBS, "--topics", TOPICS, *TINY, "--out", ""), "--out"),
    (("compare", "--subscriptions", SUBS, "--topics", TOPICS, *TINY, "--out", "{tmp}/r",
      "--chart", ""), "--chart"),
    (("charts", "--from", "{tmp}", "--out", ""), "--out"),
    (("paper", "--from", "{tmp}", "--out", ""), "--out"),
    (("summary", "--from", ""), "--from"),
    (("compare", "--write-example", "nats-inbox", ""), "--write-example"),
])
def test_an_empty_path_is_a_usage_error(args, option, tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    proc = _run(work, *[a.format(tmp=tmp_path) for a in args])
    _one_line_error(proc, option, "empty")
    assert not list(work.iterdir()), "something was written into the working directory"


# --- compare --write-example takes no workload files -----------------------------------------

@pytest.mark.parametrize("extra", [("--subscriptions", SUBS), ("--topics", TOPICS),
                                   ("--subscriptions", SUBS, "--topics", TOPICS),
                                   ("--python", sys.executable)])
def test_write_example_refuses_workload_files(extra, tmp_path):
    """(and --python: the re-run wrote the files, then the command said "exited 0 but
    reported no run" and exited 1)"""
    proc = _run(tmp_path, "compare", "--write-example", "nats-inbox", str(tmp_path / "wl"),
                *extra)
    _one_line_error(proc, "--write-example", extra[0])
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "wl").exists()


# --- a command's help and command line hold only the options it uses -------------------------

#: Options beside the size, --out, --python and --seed, by the commands that use them.
USED_BY = {
    "--algorithms": set(MEASURES) - {"primitives"},
    "--dialects": {"latency", "throughput", "memory"},
    "--method": {"latency", "primitives"},
    "--threads": {"scaling", "sharing"},
    "--round-ops": {"scaling", "contention", "sharing"},
    "--write-shares": {"sharing"},
}


@pytest.mark.parametrize("command", [*MEASURES, "all"])
def test_help_lists_only_the_options_a_command_uses(command, capsys):
    with pytest.raises(SystemExit):
        build_parser("cstrie-experiments").parse_args([command, "--help"])
    text = capsys.readouterr().out
    shown = set(re.findall(r"^\s+(?:-[a-z], )?(--[a-z-]+)", text, re.M))
    want = {"--help", "--quick", "--smoke", "--full", "--size", "--out", "--python", "--seed"}
    want |= {opt for opt, users in USED_BY.items() if command == "all" or command in users}
    assert shown == want, f"{command}: extra {shown - want}, missing {want - shown}"
    if command == "all":  # each says which commands it applies to
        flat = " ".join(text.split("options:", 1)[1].split())
        for opt, users in USED_BY.items():
            if users != USED_BY["--algorithms"]:
                said = re.search(rf"{opt} \S+ (.*?)(?= --|$)", flat).group(1)
                assert all(u in said for u in users), (opt, said)
    for opt in set(USED_BY) - want:
        with pytest.raises(SystemExit):
            build_parser("cstrie-experiments").parse_args([command, opt, "1"])
        assert "unrecognized arguments" in capsys.readouterr().err


# --- counts are worded by their number -------------------------------------------------------

def _describe(tmp: Path, n: int) -> str:
    (tmp / "s.txt").write_text("".join(f"a.b{i}\tx\n" for i in range(n)))
    (tmp / "t.txt").write_text("".join(f"a.b{i}\n" for i in range(n)))
    return read_workload(tmp / "s.txt", tmp / "t.txt", "nats").describe()


def _report(tmp: Path, n: int) -> str:
    run = Run(tmp / "r", 1, SIZES["smoke"], [])
    for _ in range(n):
        run.record("x", "cstrie", "nats", "w", {}, values=[1.0], unit="ns")
    run.finish("complete")
    out = tmp / "report.txt"
    with open(out, "w") as fh:
        run.report(fh)
    return out.read_text()


def _problems(tmp: Path, n: int) -> str:
    (tmp / "s.txt").write_text("a..b\tx\n" * n + "a.b\tx\n")
    (tmp / "t.txt").write_text("a.b\n")
    proc = _run(tmp, "compare", "--subscriptions", "s.txt", "--topics", "t.txt")
    return proc.stderr


def _table(tmp: Path, n: int) -> str:
    (tmp / "s.txt").write_text("a.b\tx\n")
    (tmp / "t.txt").write_text("a.b\n")
    proc = _run(tmp, "compare", "--subscriptions", "s.txt", "--topics", "t.txt", *TINY[:4],
                "--threads", "1", "--write-shares", "0", "--ops", "10", "--rounds", str(n),
                "--out", str(tmp / "r"), "--chart", str(tmp / "c.png"))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _unreadable(tmp: Path, n: int) -> str:
    (tmp / "x.jsonl").write_text("not json\n" * n)
    proc = subprocess.run([sys.executable, "-c", "import sys; from experiments.records "
                           "import load; load(sys.argv[1])", str(tmp)], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return proc.stderr


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("what, said", [
    (_describe, ("{n} subscription{s} of {n} pattern{s}, {n} topic{s} ({n} distinct)",)),
    (_report, ("({n} record{s})",)),
    (_problems, ("{n} problem{s} in the workload",)),
    (_unreadable, ("skipped {n} unreadable line{s} under",)),
    (_table, ("{n} round{s}; run",)),
])
def test_counts_are_worded_by_their_number(what, said, n, tmp_path):
    text = what(tmp_path, n)
    for phrase in said:
        want = phrase.format(n=n, s="" if n == 1 else "s")
        assert want in text, f"{want!r} not in {text!r}"


# --- --python: a bare name is looked up on PATH ----------------------------------------------

def test_python_given_by_name_is_found_on_path(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "cstrie-py"  # a Python known by its name only
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    path = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = _run(tmp_path, "primitives", "--smoke", "--method", "timeit", "--python",
                "cstrie-py", "--out", str(tmp_path / "r"), path=path)
    assert proc.returncode == 0, proc.stderr
    assert f"running under {bindir / 'cstrie-py'}" in proc.stderr, proc.stderr
    proc = _run(tmp_path, "primitives", "--smoke", "--python", "no-such-python-cstrie",
                "--out", str(tmp_path / "r"), path=path)
    _one_line_error(proc, "--python", "no-such-python-cstrie", "not found on PATH")


# --- process substitution: /dev/fd/N reaches a --python re-run -------------------------------

@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd")
@pytest.mark.parametrize("spelling", ["separate", "equals"])
def test_dev_fd_files_reach_a_python_rerun(spelling, tmp_path):
    """``compare --python X --subscriptions <(...)``: the shell hands the files over as
    ``/dev/fd/N``, pipes open in this process; the re-run reads them (they were lost: it
    did not inherit the descriptors)."""
    fds = []
    for text in (b"a.b\tx\na.*\ty\n_INBOX.>\tz\n", b"a.b\na.c\n_INBOX.q\n"):
        r, w = os.pipe()
        os.write(w, text)
        os.close(w)
        fds.append(r)
    try:
        files = [("--subscriptions", f"/dev/fd/{fds[0]}"), ("--topics", f"/dev/fd/{fds[1]}")]
        args = [x for opt, p in files
                for x in ([opt, p] if spelling == "separate" else [f"{opt}={p}"])]
        out = tmp_path / "r"
        proc = _run(tmp_path, "compare", "--python", sys.executable, *args, *TINY, "--out",
                    str(out), "--chart", str(tmp_path / "c.png"), pass_fds=tuple(fds))
    finally:
        for fd in fds:
            os.close(fd)
    assert proc.returncode == 0, proc.stderr
    recs = load(out)
    assert recs and {r["params"]["subscriptions"] for r in recs} == {3}
    assert {r["params"]["topics"] for r in recs} == {3}


# --- --python abbreviated: the re-run must not get it again ----------------------------------

@pytest.mark.parametrize("spelled", [["--python", "X"], ["--python=X"], ["--pyth", "X"],
                                     ["--pyt=X"], ["--p", "X"]])
def test_an_abbreviated_python_option_is_not_passed_to_the_rerun(spelled):
    """argparse takes ``--pyth X`` for ``--python X``; a re-run given it again re-ran itself
    under X, and so on without end (a chain of processes until killed)."""
    from experiments.rerun import strip_python

    for command in ("primitives", "compare"):
        argv = [command, "--smoke", *spelled, "--seed", "2"]
        assert strip_python(argv) == [command, "--smoke", "--seed", "2"], argv
