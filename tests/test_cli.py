"""The harness's command line before and around a run: output folders and ``--python`` are
checked up front (usage errors, exit 2, one line naming the option), and a run stopped by
Ctrl-C or SIGTERM says so in its run file.

Everything goes through the real command line (``python -m experiments``, a subprocess).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from experiments.records import load
from test_experiments_smoke import ROOT, cli


def _usage_error(proc, option: str, *words: str) -> str:
    """The one line of a usage error (exit 2) that names ``option``."""
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "error:" in line and option in line, proc.stderr
    for word in words:
        assert word in line, line
    return line


@pytest.mark.parametrize("args", [
    ("memory", "--smoke", "--out", "{bad}"),
    ("all", "--smoke", "--out", "{bad}"),
    ("charts", "--from", "{tmp}", "--out", "{bad}"),
    ("paper", "--from", "{tmp}", "--out", "{bad}/paper.md"),
    ("pipeline", "generate", "--out", "{bad}", "--subscriptions", "3", "--messages", "3"),
    ("pipeline", "aggregate", "--from", "{tmp}", "--out", "{bad}"),
    ("pipeline", "route", "--subscriptions", "{tmp}", "--messages", "{tmp}", "--out", "{bad}"),
])
@pytest.mark.parametrize("bad", ["file", "proc"])
def test_an_output_folder_that_cannot_be_made_is_a_usage_error(args, bad, tmp_path):
    """Under a regular file (no one can create a folder there, root included), and in
    ``/proc`` (where the permission bits say writable to root)."""
    if bad == "file":
        (tmp_path / "a-file").write_text("x")
        bad_dir = tmp_path / "a-file" / "out"
        why = "is not a directory"
    else:
        if not Path("/proc/self").is_dir():
            pytest.skip("no /proc here")
        bad_dir = Path("/proc/cstrie-nope")
        why = "/proc does not take a new folder"
    argv = [a.format(bad=bad_dir, tmp=tmp_path) for a in args]
    line = _usage_error(cli(*argv), "--out", str(bad_dir), why)
    assert len(line) < 300



def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(sys.platform == "win32", reason="shell scripts as interpreters")
def test_python_must_be_a_python_that_imports_the_package(tmp_path):
    out = str(tmp_path / "results")
    line = _usage_error(cli("memory", "--smoke", "--out", out, "--python", "/bin/true"),
                        "--python", "/bin/true", "is not a Python")
    assert "exited 0" in line
    # This interpreter without site-packages (so without cereggii, nor an editable install).
    isolated = _script(tmp_path / "isolated", f'exec "{sys.executable}" -I -S "$@"')
    _usage_error(cli("memory", "--smoke", "--out", out, "--python", isolated), "--python",
                 isolated, "cannot import this package", "No module named")
    assert not (tmp_path / "results").exists()


def test_python_rerun_says_which_build_it_found(tmp_path):
    proc = cli("primitives", "--smoke", "--method", "timeit", "--python", sys.executable,
               "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    gil = "GIL build" if not sysconfig.get_config_var("Py_GIL_DISABLED") else "free-threaded"
    assert f"({'Python ' + platform.python_version()}, {gil}" in proc.stderr, proc.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="shell scripts as interpreters")
def test_a_rerun_that_exits_0_without_records_is_an_error(tmp_path):
    """An interpreter that answers the check but runs nothing: exit 0, no records."""
    lazy = _script(tmp_path / "lazy",
                   f'case " $* " in *" -c "*) exec "{sys.executable}" "$@";; esac; exit 0')
    proc = cli("memory", "--smoke", "--out", str(tmp_path / "r"), "--python", lazy)
    assert proc.returncode == 1, proc.stderr
    assert "exited 0 but reported no run" in proc.stderr.strip().splitlines()[-1]


def _interrupt(tmp_path: Path, signum: int, *extra: str) -> tuple[int, dict, list[dict]]:
    """Start ``all --smoke``, send ``signum`` once its first records are on disk; return
    the exit status, the run file and the records kept."""
    out = tmp_path / "results"
    env = dict(os.environ, CSTRIE_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    proc = subprocess.Popen([sys.executable, "-m", "experiments", "all", "--smoke", "--method",
                             "timeit", "--out", str(out), *extra], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if any(os.path.getsize(f) for f in glob.glob(f"{out}/*/latency-*.jsonl")):
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    runs = glob.glob(f"{out}/*/run-*.json")
    assert len(runs) == 1, (runs, err)
    return proc.returncode, json.loads(Path(runs[0]).read_text()), load(out)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signame, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_run_says_so_in_its_run_file(tmp_path, signame, code):
    rc, manifest, records = _interrupt(tmp_path, getattr(signal, signame))
    assert rc == code
    assert manifest["status"] == "interrupted", manifest
    stop = manifest["interrupted"]
    assert stop["signal"] == signame and stop["experiment"] == "latency" and stop["when"]
    # The records written before the signal are kept, and the run file counts them.
    assert records and manifest["records"] == {"latency": len(records)}
    assert {r["run_id"] for r in records} == {manifest["run_id"]}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_reaches_a_python_rerun(tmp_path):
    """Ctrl-C sent to the command only (not its process group) is passed on to the re-run,
    which then writes its run file like a run interrupted directly."""
    rc, manifest, records = _interrupt(tmp_path, signal.SIGINT, "--python", sys.executable)
    assert rc == 130
    assert manifest["status"] == "interrupted" and manifest["interrupted"]["signal"] == "SIGINT"
    assert records


def test_a_complete_run_says_so_in_its_run_file(tmp_path):
    proc = cli("primitives", "--smoke", "--method", "timeit", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (run_file,) = tmp_path.glob("*/run-*.json")
    manifest = json.loads(run_file.read_text())
    assert manifest["status"] == "complete" and manifest["records"]["primitives"] > 0


# --- extras: a missing optional module costs one line, naming the extra to install ----------

def _without(module: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m experiments *args`` in an interpreter where ``module`` cannot be imported
    (``sys.modules[module] = None``, as if it were not installed)."""
    code = (f"import sys; sys.modules[{module!r}] = None; from experiments.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    env = dict(os.environ, CSTRIE_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module, extra, args", [
    ("numpy", "pipeline", ("pipeline", "generate", "--out", "{tmp}/wl", "--subscriptions", "3",
                           "--messages", "3", "--wildcards", "single=0.2", "--levels", "2-4")),
    # found, but failing on import inside the command (the run-time path)
    ("pyarrow.parquet", "pipeline", ("pipeline", "generate", "--out", "{tmp}/wl",
                                     "--subscriptions", "3", "--messages", "3")),
    ("pyspark", "pipeline", ("pipeline", "route", "--subscriptions", "{tmp}", "--messages",
                             "{tmp}", "--out", "{tmp}/routed")),
    ("pandas", "pipeline", ("pipeline", "aggregate", "--from", "{tmp}", "--out", "{tmp}/agg")),
    ("matplotlib", "experiments", ("charts", "--from", "{tmp}", "--out", "{tmp}/figures")),
])
def test_a_missing_extra_is_one_line_naming_it(module, extra, args, tmp_path):
    proc = _without(module, *[a.format(tmp=tmp_path) for a in args])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    top = module.split(".")[0]
    assert lines[0].startswith("error: ") and f"needs {top}," in lines[0], lines[0]
    assert lines[0].endswith(f"pip install 'cstrie[{extra}]'"), lines[0]


def test_help_needs_no_extra(tmp_path):
    """Parsing (argument types included) imports no extra: help works without numpy."""
    proc = _without("numpy", "pipeline", "generate", "--wildcards", "single=0.2", "--levels",
                    "2-4", "--help")
    assert proc.returncode == 0 and "--wildcards" in proc.stdout, proc.stderr
    assert not proc.stderr


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(top-level module, imported at module level?) of every absolute import in ``path``."""
    import ast

    tree = ast.parse(path.read_text())
    top_level = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        out += [(n.split(".")[0], id(node) in top_level) for n in names]
    return out


#: Modules that import an extra at module level: each is imported only by the command that
#: needs it, after the extra's check (generate: pipeline generate; the pyperf worker runs
#: in a subprocess started only when pyperf is importable).
EXTRA_AT_IMPORT = {"experiments/pipeline/generate.py", "experiments/measure/_pyperf_worker.py"}


def test_every_import_is_stdlib_the_package_or_a_declared_extra():
    import tomllib

    from experiments.extras import DISTRIBUTIONS, EXTRAS, extra_of

    own = {"ctrie", "baselines", "experiments", "cereggii"}
    for path in sorted((ROOT / "experiments").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for module, at_import in _imports(path):
            if module in sys.stdlib_module_names or module in own or module == "__future__":
                continue
            assert extra_of(module), f"{rel} imports {module}, which no extra declares"
            assert not at_import or rel in EXTRA_AT_IMPORT, (
                f"{rel} imports {module} at module level: import it where it is used")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0] for r in declared[extra]}
        for module in modules:
            assert DISTRIBUTIONS.get(module, module) in names, (extra, module, names)


def test_paper_from_an_installed_package_says_it_is_built_from_a_checkout(tmp_path):
    """The packages alone (as a wheel installs them: no paper/, no pyproject.toml): the
    paper command says in one line where the paper is built; a template given still works."""
    import shutil

    site = tmp_path / "site"
    for package in ("ctrie", "baselines", "experiments"):
        shutil.copytree(ROOT / package, site / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, CSTRIE_NO_PROGRESS="1", PYTHONPATH=str(site))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)

    results = str(tmp_path / "results")
    proc = run("primitives", "--smoke", "--method", "timeit", "--out", results)
    assert proc.returncode == 0, proc.stderr
    proc = run("paper", "--from", results)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "built from a checkout" in lines[0], proc.stderr
    assert "--template" in lines[0]
    paper = tmp_path / "paper.md"
    proc = run("paper", "--from", results, "--template",
               str(ROOT / "paper" / "paper.template.md"), "--out", str(paper))
    assert proc.returncode == 0 and paper.is_file(), proc.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_compare_stopped_by_sigterm_says_so_in_its_run_file(tmp_path):
    """compare is a measuring run too: SIGTERM is recorded as an interruption, exit 143."""
    import json
    import signal
    import time

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "r"
    env = dict(os.environ, CSTRIE_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH"))
                                          if p))
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments", "compare", "--subscriptions",
         str(root / "examples/nats-inbox/subscriptions.txt"), "--topics",
         str(root / "examples/nats-inbox/topics.txt"), "--rounds", "50", "--out", str(out)],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(out.glob("*/compare-*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    run = json.loads(next(out.glob("*/run-*.json")).read_text())
    assert run["status"] == "interrupted" and run["interrupted"]["signal"] == "SIGTERM"
