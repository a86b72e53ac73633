"""``--python PATH``: the same command re-run under another interpreter.

``PATH -m experiments <the same arguments without --python>`` runs with this checkout first
on ``PYTHONPATH`` and inherited stdio. It tells the command that started it what it wrote
(its run id, run file and record count) through the file named in :data:`RUN_REPORT_ENV`,
so that a re-run that exits 0 having measured nothing is an error rather than a success.
Ctrl-C and SIGTERM reach the re-run (it records the interruption in its run file) instead
of killing it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .env import PROJECT_ROOT, Run
from .writing import WriteError

__all__ = ["PROG_ENV", "RUN_REPORT_ENV", "Terminated", "child_env", "end_failed",
           "end_interrupted", "inherited_fds", "reexec", "report_run", "terminate"]

#: The environment variable naming the file a re-run reports what it wrote to.
RUN_REPORT_ENV = "CSTRIE_RUN_REPORT"

#: Seconds a re-run has to stop by itself after a Ctrl-C before it is sent one: from a
#: terminal, Ctrl-C reaches both processes, and a second one could cut its run file short.
GRACE_SECONDS = 3.0


#: The environment variable that tells a re-run how the user called the command, so that
#: its hints name ``cstrie-experiments`` when that is what the user typed.
PROG_ENV = "CSTRIE_PROG"


class Terminated(KeyboardInterrupt):
    """SIGTERM during a run, raised like Ctrl-C's KeyboardInterrupt (which the measuring
    code's ``except Exception`` lets through) so that the run ends the same way."""


def terminate(signum: int, _frame: object) -> None:
    """A SIGTERM handler: raise :class:`Terminated`."""
    raise Terminated(signum)


def child_env() -> dict[str, str]:
    """The environment of a re-run: this checkout first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _is_python_option(arg: str) -> bool:
    """``arg`` is ``--python`` as argparse takes it: whole or abbreviated (``--pyth``, no
    other option of a command that has ``--python`` begins with ``--p``)."""
    return len(arg) > 2 and "--python".startswith(arg)


def strip_python(argv: list[str]) -> list[str]:
    """``argv`` without ``--python PATH`` / ``--python=PATH``, also abbreviated (``--pyth
    PATH``): a re-run given the option again would re-run itself without end."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif _is_python_option(arg):
            skip = True
        elif not (arg.startswith("--") and "=" in arg
                  and _is_python_option(arg.split("=", 1)[0])):
            out.append(arg)
    return out


#: A path naming one of this process's descriptors (what ``<(...)`` hands a command).
_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")


def inherited_fds(argv: list[str]) -> tuple[int, ...]:
    """The open descriptors that ``argv`` names as ``/dev/fd/N`` (or ``/proc/self/fd/N``),
    alone or as ``--option=/dev/fd/N``: a re-run must inherit them to read those files."""
    fds = []
    for arg in argv:
        m = _FD_PATH.fullmatch(arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg
                               else arg)
        if m and int(m.group(1)) > 2:
            try:
                os.fstat(int(m.group(1)))
            except OSError:
                continue  # not open here: the re-run will say it cannot read the file
            fds.append(int(m.group(1)))
    return tuple(sorted(set(fds)))


def _wait(proc: subprocess.Popen[Any]) -> int:
    """Wait for the re-run, passing SIGTERM on to it, and Ctrl-C if it has not stopped by
    itself within :data:`GRACE_SECONDS`."""
    def forward(signum: int, _frame: Any) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                try:
                    return proc.wait(GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    forward(signal.SIGINT, None)
    finally:
        signal.signal(signal.SIGTERM, previous)


def reexec(python: str, argv: list[str], found: str) -> int:
    """Run ``python -m experiments argv`` (``found``: what the ``--python`` check said it
    is); return its exit code, or 1 if it exited 0 without having written a record."""
    # -P keeps the working directory off sys.path: a folder experiments/ of the user's own
    # there must not stand in for this package (child_env's PYTHONPATH points at it).
    cmd = [python, "-P", "-m", "experiments", *strip_python(argv)]
    print(f"== running under {python} ({found}): {' '.join(cmd[1:])}", file=sys.stderr,
          flush=True)
    with tempfile.TemporaryDirectory(prefix="cstrie-run-") as tmp:
        report = Path(tmp) / "run.json"
        env = child_env()
        env[RUN_REPORT_ENV] = str(report)
        try:
            # Files given as /dev/fd/N (a shell's process substitution, <(...)) are this
            # process's descriptors: the re-run inherits them under the same numbers.
            proc = subprocess.Popen(cmd, env=env, pass_fds=inherited_fds(argv))
        except OSError as exc:
            print(f"error: --python {python}: cannot run it: {exc}", file=sys.stderr)
            return 2
        rc = _wait(proc)
        try:
            done = json.loads(report.read_text())
        except (OSError, ValueError):
            done = None
    if rc:
        what = f"was interrupted (exit {rc})" if rc in (130, 143) else f"exited with code {rc}"
        print(f"error: --python {python}: the run {what}"
              + (f" (see {done['run_file']})" if isinstance(done, dict) else ""),
              file=sys.stderr)
        return rc
    if not isinstance(done, dict):
        print(f"error: --python {python}: the run exited 0 but reported no run (it did not "
              "get to measuring)", file=sys.stderr)
        return 1
    if not done.get("records"):
        print(f"error: --python {python}: run {done.get('run_id')} exited 0 but wrote no "
              f"records (see {done.get('run_file')})", file=sys.stderr)
        return 1
    return 0


def end_interrupted(run: Run, experiment: str | None, exc: KeyboardInterrupt) -> int:
    """Record in ``run``'s file that Ctrl-C or SIGTERM (:class:`Terminated`) interrupted it
    in ``experiment``, say so, and return the exit status (130, or 143 for SIGTERM)."""
    # No second signal while the run file is written: it would cut it short.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
    run.finish("interrupted", experiment=experiment, signal=name)
    run.report()
    report_run(run)
    print(f"interrupted ({name}) in {experiment}: the records written so far are kept; "
          f"{run.manifest} says so", file=sys.stderr)
    return 143 if name == "SIGTERM" else 130


def end_failed(run: Run, experiment: str | None, exc: BaseException) -> None:
    """Record in ``run``'s file that ``exc`` ended it in ``experiment`` (the caller
    re-raises ``exc``); if the run file cannot be written either, the error raised says
    what failed."""
    try:
        run.finish("failed", experiment=experiment, error=f"{type(exc).__name__}: {exc}")
        run.report()
        report_run(run)
    except WriteError:
        pass


def report_run(run: Run) -> None:
    """In a re-run: tell the command that started it what was written."""
    path = os.environ.get(RUN_REPORT_ENV)
    if path:
        Path(path).write_text(json.dumps({"run_id": run.run_id, "run_file": str(run.manifest),
                                          "records": sum(run.counts.values())}))
