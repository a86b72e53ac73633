"""The pipeline on a real Spark standalone cluster: the README's recipe, run as written.

A master and one worker (1 core, 1 GiB) are started on 127.0.0.1 from the scripts that ship
with PySpark (``pyspark/bin/spark-class``), in a folder of their own and with an environment
that holds neither this checkout on ``PYTHONPATH`` nor any ``PYSPARK_PYTHON``: an executor
can only import the package from the archive it is shipped. The archive is made by
``tools/pipeline_env.py`` (a wheel of this checkout in a packed virtual environment; cached
between runs, see there). Then the same workload is routed three ways and must give the same
deliveries:

- ``python -m experiments pipeline route --master spark://... --conf
  spark.archives=ENV#env --executor-python ./env/bin/python`` (the README's command);
- ``spark-submit --master spark://... --archives ENV#env --conf
  spark.pyspark.python=./env/bin/python experiments/pipeline/submit.py route ...``;
- the same ``route`` in local mode.

The summaries say which interpreter and which copy of the package every task ran: those of
the unpacked archive in the worker's folder, not this checkout. Master and worker are stopped
at the end (and every wait is bounded). Skipped, with the reason, without Java or pyspark.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Environment variables that would let an executor find this checkout or pick an
#: interpreter behind the test's back; none reaches the cluster or the drivers.
SCRUBBED = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYSPARK_GATEWAY_PORT",
            "PYSPARK_GATEWAY_SECRET", "SPARK_HOME", "SPARK_CONF_DIR", "SPARK_LOCAL_DIRS")
#: The test's settings beside the README's: no web UIs, small shuffles, and one failed task
#: is the end (not four tries of a task that cannot import the package).
TEST_CONF = ("spark.ui.enabled=false", "spark.sql.shuffle.partitions=4",
             "spark.task.maxFailures=1")
START_TIMEOUT = 90  # seconds for the master or the worker to come up
RUN_TIMEOUT = 300  # seconds for one driver


def _pyspark_home() -> Path:
    pyspark = pytest.importorskip("pyspark", reason="pyspark not installed (the pipeline "
                                                    "extra)")
    pytest.importorskip("pyarrow", reason="pyarrow not installed (the pipeline extra)")
    from experiments.pipeline.sparkutil import java_problem

    problem = java_problem()
    if problem:
        pytest.skip(problem)
    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # every Spark process listens on loopback only
    env.update(extra)
    return env


def _wait_for(log: Path, text: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise AssertionError(f"the {what} did not log {text!r} within {START_TIMEOUT} s:\n{tail}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[dict]:
    """A standalone master and one worker on 127.0.0.1; their URL and folders."""
    home = _pyspark_home()
    base = tmp_path_factory.mktemp("standalone")
    port = _free_port()
    spark_class = str(home / "bin" / "spark-class")
    env = _env(SPARK_WORKER_DIR=str(base / "work"), SPARK_LOG_DIR=str(base / "logs"))
    procs: list[subprocess.Popen] = []
    try:
        for name, args, ready in [
            ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(port), "--webui-port", str(_free_port())],
             "I have been elected leader"),
            ("worker", ["org.apache.spark.deploy.worker.Worker",
                        f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1",
                        "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir",
                        str(base / "work")],
             "Successfully registered with master"),
        ]:
            log = base / f"{name}.log"
            with open(log, "w") as fh:
                proc = subprocess.Popen([spark_class, *args], cwd=base, env=env,
                                        stdout=fh, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            procs.append(proc)
            _wait_for(log, ready, proc, name)
        yield {"master": f"spark://127.0.0.1:{port}", "home": home, "work": base / "work"}
    finally:
        for proc in reversed(procs):
            _stop(proc)


@pytest.fixture(scope="module")
def packed_env(tmp_path_factory) -> Path:
    """The README's ``python tools/pipeline_env.py --out ...`` (cached between runs)."""
    out = tmp_path_factory.mktemp("env") / "cstrie-env.tar.gz"
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "pipeline_env.py"), "--out",
                          str(out)], env=_env(), capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    print(f"{run.stdout.strip()} [{time.perf_counter() - t0:.1f} s]")
    return out


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> Path:
    from experiments.pipeline.generate import Workload, generate

    folder = tmp_path_factory.mktemp("workload")
    generate(Workload(subscriptions=2000, messages=30_000, seed=9, invalid_rate=0.01), folder)
    return folder


def _route_args(workload: Path, out: Path) -> list[str]:
    return ["route", "--subscriptions", str(workload / "subscriptions"), "--messages",
            str(workload / "messages"), "--out", str(out), "--partitions", "4"]


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A driver: this checkout importable (only) by the driver."""
    t0 = time.perf_counter()
    run = subprocess.run(cmd, cwd=cwd, env=_env(PYTHONPATH=str(ROOT)), capture_output=True,
                         text=True, timeout=RUN_TIMEOUT)
    print(f"$ {' '.join(cmd)}\n  rc={run.returncode} in {time.perf_counter() - t0:.1f} s\n"
          f"  {run.stdout.strip().splitlines()[0] if run.stdout.strip() else ''}")
    assert run.returncode == 0, f"rc={run.returncode}\n{run.stderr[-4000:]}"
    return run


def _deliveries(out: Path) -> set[tuple[int, str]]:
    import pyarrow.parquet as pq

    t = pq.read_table(out / "deliveries", columns=["message_id", "subscriber"])
    return set(zip(t.column(0).to_pylist(), t.column(1).to_pylist()))


def _ran_in_the_archive(out: Path, cluster: dict) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    tasks = summary["tasks"]
    work = str(cluster["work"].resolve())
    assert tasks["count"] == 4, tasks
    for python in tasks["executors"]:
        assert python.startswith(work) and python.endswith("/env/bin/python"), tasks
    for package in tasks["packages"]:
        assert package.startswith(work) and "/env/lib/" in package, tasks
        assert not package.startswith(str(ROOT)), tasks
    assert summary["matcher_builds"]["builds"] == 1, summary["matcher_builds"]  # 1 core
    assert summary["executor_python"] == "./env/bin/python"
    print(f"  tasks ran {tasks['executors']}, imported {tasks['packages']}")
    return summary


@pytest.fixture(scope="module")
def local_deliveries(workload: Path, tmp_path_factory) -> set[tuple[int, str]]:
    out = tmp_path_factory.mktemp("local") / "out"
    _run([sys.executable, "-m", "experiments", "pipeline", *_route_args(workload, out),
          "--master", "local[2]", *[x for c in TEST_CONF for x in ("--conf", c)]], ROOT)
    found = _deliveries(out)
    assert len(found) > 10_000
    return found


def test_route_on_a_standalone_cluster_as_the_readme_says(cluster, packed_env, workload,
                                                         local_deliveries, tmp_path) -> None:
    out = tmp_path / "routed"
    _run([sys.executable, "-m", "experiments", "pipeline", *_route_args(workload, out),
          "--master", cluster["master"], "--conf", "spark.executor.memory=1g",
          "--conf", f"spark.archives={packed_env}#env",
          "--executor-python", "./env/bin/python",
          *[x for c in TEST_CONF for x in ("--conf", c)]], tmp_path)
    summary = _ran_in_the_archive(out, cluster)
    assert summary["master"] == cluster["master"]
    assert _deliveries(out) == local_deliveries
    assert summary["deliveries"] == len(local_deliveries)


def test_spark_submit_runs_the_driver(cluster, packed_env, workload, local_deliveries,
                                      tmp_path) -> None:
    out = tmp_path / "routed"
    _run([str(cluster["home"] / "bin" / "spark-submit"), "--master", cluster["master"],
          "--archives", f"{packed_env}#env",
          "--conf", "spark.pyspark.python=./env/bin/python",
          "--conf", f"spark.pyspark.driver.python={sys.executable}",
          *[x for c in TEST_CONF for x in ("--conf", c)],
          str(ROOT / "experiments" / "pipeline" / "submit.py"), *_route_args(workload, out)],
         tmp_path)
    summary = _ran_in_the_archive(out, cluster)
    assert summary["master"] == cluster["master"]
    assert _deliveries(out) == local_deliveries
