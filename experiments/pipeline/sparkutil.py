"""Spark plumbing: the Java check, the session, paths on any file system, and the output
folder's checks and swap (the inputs' checks are in :mod:`experiments.pipeline.inputs`).

Paths go through Hadoop's FileSystem API (via the session's JVM), so ``--out`` and the inputs
may be local paths or any URI the cluster's Hadoop configuration knows (``hdfs://``,
``s3a://``...), and the driver writes ``summary.json`` next to the Spark-written outputs.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from ..preflight import dir_problem

__all__ = [
    "JAVA_HINT",
    "PipelineError",
    "Store",
    "check_local_out",
    "checksum_error",
    "is_hidden",
    "is_local",
    "java_problem",
    "literal",
    "local_path",
    "not_empty",
    "out_problem",
    "read_parquet",
    "remove_tree",
    "session",
    "swap_in",
    "under_spark_submit",
]

JAVA_HINT = ("install a JDK 17 (e.g. `apt-get install openjdk-17-jre-headless`) and set "
             "JAVA_HOME (e.g. export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64)")


class PipelineError(Exception):
    """A problem the user can fix (bad argument, bad input); printed without a traceback."""


# Hadoop's message: "Checksum error: <path as it is, spaces included> at <pos> exp: <crc>
# got: <crc>" (FSInputChecker, DataChecksum).
_CHECKSUM = re.compile(
    r"org\.apache\.hadoop\.fs\.ChecksumException: Checksum error: (.+?) at (\d+) exp: ")


def checksum_error(exc: BaseException) -> PipelineError | None:
    """The one-line error for a Spark job that failed on Hadoop's ``ChecksumException`` (a
    file that no longer matches its ``.crc``, changed after ``route`` checked it), or None
    for any other failure."""
    found = _CHECKSUM.search(str(exc))
    if found is None:
        return None
    return PipelineError(f"{found[1]} does not match its Hadoop checksum file (from byte "
                         f"{found[2]}), and Spark refused to read it: if the file is as it "
                         "should be, delete the .crc file beside it; otherwise rewrite the file")


def java_problem() -> str | None:
    """Why Spark cannot start a JVM here, or None if a ``java`` is available."""
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", "java")
        if os.path.isfile(exe) and os.access(exe, os.X_OK):
            return None
        return f"JAVA_HOME={home} holds no bin/java: {JAVA_HINT}"
    if shutil.which("java"):
        return None
    return f"Spark needs Java, and there is no `java` on PATH and no JAVA_HOME: {JAVA_HINT}"


#: Spark's console when ``quiet``: warnings and errors, one line each (the first line of a
#: stack trace), not the start-up notes of a local session (no native Hadoop library, a
#: hostname that resolves to loopback) nor Spark's notes about its default log4j profile.
LOG4J2_QUIET = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex{short}
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
"""


def _remove_if_there(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)


def _log4j2_file() -> str:
    """A file holding :data:`LOG4J2_QUIET` (removed when the interpreter exits)."""
    fd, path = tempfile.mkstemp(prefix="cstrie-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as fh:
        fh.write(LOG4J2_QUIET)
    atexit.register(_remove_if_there, path)
    return path


def under_spark_submit() -> bool:
    """Whether this driver was started by ``spark-submit`` (which launched the JVM and
    passed its gateway here), not by ``python``."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session(master: str | None = "local[*]", conf: Iterable[tuple[str, str]] = (),
            app_name: str = "cstrie-pipeline", quiet: bool = True,
            executor_python: str | None = None) -> Any:
    """A SparkSession for ``master`` with ``conf`` applied (get-or-create).

    ``master`` None: the master ``spark-submit`` was given, when it started this driver
    (:func:`under_spark_submit`), else ``local[*]``.

    The executors' Python: PySpark's driver takes the interpreter its Python workers run
    from the ``PYSPARK_PYTHON`` environment variable when the session starts; the setting
    ``spark.pyspark.python`` only acts through ``spark-submit``, which exports it, so a
    driver started with ``python -m ...`` ignores it. ``executor_python`` (``route
    --executor-python``), else a ``spark.pyspark.python`` in ``conf``, is therefore exported
    as ``PYSPARK_PYTHON`` before the session starts, and also set as ``spark.pyspark.python``
    and ``spark.executorEnv.PYSPARK_PYTHON``. Without either, in local mode the workers run
    this interpreter (``PYSPARK_PYTHON`` is set to ``sys.executable`` unless already set), so
    they import the same package; on a cluster, ``PYSPARK_PYTHON`` as it is, else each node's
    ``python3``. ``spark.sql.shuffle.partitions`` defaults to 8 in local mode (the figures
    the job shuffles are small).

    ``quiet`` (unless ``conf`` says otherwise): no progress bars
    (``spark.ui.showConsoleProgress``), and the driver JVM starts with
    :data:`LOG4J2_QUIET` (``-Dlog4j2.configurationFile`` in
    ``spark.driver.extraJavaOptions``), so that its console holds warnings and errors from
    the first line on; the log level is also set to WARN once the session exists (for a
    JVM that was already running). The JVM's own ``WARNING: Using incubator modules`` line
    (Spark adds ``jdk.incubator.vector``) is printed before any of this can act.
    """
    problem = java_problem()
    if problem:
        raise PipelineError(problem)
    conf = list(conf)
    keys = {k for k, _ in conf}
    if master is None and not under_spark_submit():
        master = "local[*]"
    if master is None:
        from pyspark import SparkConf

        local = SparkConf().get("spark.master", "").startswith("local")
    else:
        local = master.startswith("local")
    if executor_python is None:
        executor_python = dict(conf).get("spark.pyspark.python")
    if executor_python:
        os.environ["PYSPARK_PYTHON"] = executor_python
    elif local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if executor_python:
        builder = builder.config("spark.pyspark.python", executor_python).config(
            "spark.executorEnv.PYSPARK_PYTHON", executor_python)
    if local and "spark.sql.shuffle.partitions" not in keys:
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    if quiet and "spark.ui.showConsoleProgress" not in keys:
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    if quiet and "spark.driver.extraJavaOptions" not in keys and not under_spark_submit():
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-Dlog4j2.configurationFile=file:{_log4j2_file()}")
    for key, value in conf:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("WARN")
    return spark


class Store:
    """Existence checks, listings and small text files on any Hadoop file system."""

    def __init__(self, spark: Any) -> None:
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        p = self._jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self._conf), p

    def exists(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

    def is_dir(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p) and fs.getFileStatus(p).isDirectory())

    def children(self, path: str) -> list[str]:
        """Names of the entries of directory ``path`` (empty if it does not exist)."""
        fs, p = self._fs(path)
        if not fs.exists(p) or not fs.getFileStatus(p).isDirectory():
            return []
        return [s.getPath().getName() for s in fs.listStatus(p)]

    def files(self, path: str) -> tuple[list[str], list[str], list[str]]:
        """The files Spark reads below folder ``path``, their paths relative to it, and the
        hidden entries skipped (:func:`is_hidden`, at any depth: a hidden folder is not
        entered); or ``[path]`` if it is a file."""
        fs, p = self._fs(path)
        if not fs.getFileStatus(p).isDirectory():
            return [str(p.toString())], [p.getName()], []
        found: list[tuple[str, str]] = []
        hidden: list[str] = []
        todo = [(p, "")]
        while todo:
            folder, rel = todo.pop()
            for status in fs.listStatus(folder):
                q = status.getPath()
                name = f"{rel}{q.getName()}"
                if is_hidden(q.getName()):
                    hidden.append(name + "/" * bool(status.isDirectory()))
                elif status.isDirectory():
                    todo.append((q, name + "/"))
                else:
                    found.append((name, str(q.toString())))
        found.sort()
        return [f for _, f in found], [r for r, _ in found], sorted(hidden)

    def parquet_rows(self, path: str) -> int:
        """The rows of Parquet file ``path`` by its footer (parquet-hadoop, in the JVM)."""
        jvm = self._jvm
        _, p = self._fs(path)
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(p, self._conf))
        try:
            return int(reader.getRecordCount())
        finally:
            reader.close()

    def parquet_elements(self, path: str, column: str) -> int | None:
        """The elements of list column ``column`` in the Parquet files of folder ``path``,
        by their footers: each leaf column chunk's values less its nulls (an empty or null
        list is one null there). None if a chunk has no null count."""
        jvm = self._jvm
        total = 0
        for f in self.files(path)[0]:
            _, p = self._fs(f)
            reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
                jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(p, self._conf))
            try:
                for block in reader.getFooter().getBlocks():
                    for chunk in block.getColumns():
                        if chunk.getPath().toArray()[0] != column:
                            continue
                        stats = chunk.getStatistics()
                        if stats is None or not stats.isNumNullsSet():
                            return None
                        total += int(chunk.getValueCount()) - int(stats.getNumNulls())
            finally:
                reader.close()
        return total

    def delete(self, path: str) -> None:
        fs, p = self._fs(path)
        if fs.exists(p):
            fs.delete(p, True)

    def rename(self, src: str, dst: str) -> None:
        fs, p = self._fs(src)
        q = self._jvm.org.apache.hadoop.fs.Path(dst)
        if not fs.rename(p, q):
            raise RuntimeError(f"cannot rename {src} to {dst}")

    def write_text(self, path: str, text: str) -> None:
        fs, p = self._fs(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def read_text(self, path: str) -> str:
        fs, p = self._fs(path)
        stream = fs.open(p)
        try:
            data = self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return bytes(data).decode("utf-8")


def is_local(path: str) -> bool:
    """Whether ``path`` names the local file system (no scheme, or ``file:``)."""
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(path: str) -> str:
    """The local file system path of a local ``path``: ``file:``, ``file://`` and
    ``file:///`` dropped (as text: a ``#`` or ``?`` in a folder name is no URI syntax)."""
    if not path.startswith("file:"):
        return path
    rest = path[len("file:"):]
    if rest.startswith("//"):  # file://host/path, file:///path
        rest = rest[2:]
        rest = rest[rest.find("/"):] if "/" in rest else "/"
    return rest


_GLOB = re.compile(r"([\\{}\[\]*?])")


def is_hidden(name: str) -> bool:
    """Whether Spark's file listing skips a file or folder of this name, as its
    ``HadoopFSUtils.shouldFilterOutPathName`` does for data files: a name starting with ``.``
    (``.part-0.crc``), or with ``_`` unless it holds ``=`` (``_SUCCESS``, ``_temporary``,
    ``_metadata``; but ``_c=1`` is a partition folder), or ending with ``._COPYING_`` (a copy
    under way)."""
    return ((name.startswith("_") and "=" not in name) or name.startswith(".")
            or name.endswith("._COPYING_"))


def literal(path: str) -> str:
    """``path`` with its glob characters escaped: Spark expands them in read paths
    (``out[2]`` would be a character class)."""
    return _GLOB.sub(r"\\\1", path)


def read_parquet(spark: Any, path: str) -> Any:
    """``spark.read.parquet`` of the literal ``path`` (see :func:`literal`)."""
    return spark.read.parquet(literal(path))


def out_problem(out: str, present: list[str], overwrite: bool,
                ours: Iterable[str]) -> PipelineError | None:
    """Why a run may not replace ``--out`` holding ``present``, or None. A run replaces
    ``--out`` as a whole: it needs ``overwrite`` unless ``--out`` is empty, and then must
    hold nothing but ``ours`` (a run's outputs) and Hadoop's ``.crc`` checksums of them."""
    present = [n for n in present if not (n.startswith(".") and n.endswith(".crc"))]
    if present and not overwrite:
        return not_empty(out, present)
    foreign = sorted(set(present) - set(ours))
    if foreign:
        shown = ", ".join(foreign[:6]) + (", ..." if len(foreign) > 6 else "")
        return PipelineError(f"--out {out}: holds {shown}, which route does not write; "
                             "--overwrite replaces the whole folder, so move them out or "
                             "choose another --out")
    return None


def not_empty(out: str, present: list[str]) -> PipelineError:
    """The error for an ``--out`` that holds ``present`` and no ``--overwrite``."""
    shown = ", ".join(sorted(present)[:6]) + (", ..." if len(present) > 6 else "")
    return PipelineError(f"--out {out}: not empty (holds {shown}); pass --overwrite to "
                         "replace the outputs of the earlier run in it")


def check_local_out(out: str, overwrite: bool, ours: Iterable[str]) -> None:
    """Check a local ``--out`` without Spark (see :func:`out_problem`), and that the folder
    holding it takes new entries: the run is written beside ``--out`` and renamed in."""
    local = local_path(out)
    why = dir_problem(local)
    if why:
        raise PipelineError(f"--out {out}: {why}")
    parent = os.path.dirname(os.path.realpath(local))  # a link's target is what is replaced
    why = dir_problem(parent) if os.path.isdir(local) else None
    if why:
        raise PipelineError(f"--out {out}: its folder {parent} {why} (a run is written "
                            "beside --out, then renamed in)")
    problem = out_problem(out, os.listdir(local) if os.path.isdir(local) else [], overwrite,
                          ours)
    if problem:
        raise problem


def remove_tree(path: str, store: Store | None) -> None:
    """Delete folder ``path`` if it exists: locally (``store`` None) or through Hadoop."""
    local = local_path(path)
    if store is not None:
        store.delete(path)
    elif os.path.islink(local):
        os.unlink(local)
    elif os.path.lexists(local):
        shutil.rmtree(local)


def swap_in(stage: str, out: str, aside: str, store: Store | None) -> bool:
    """Put the finished folder ``stage`` in place of ``out``: an existing ``out`` is
    renamed to ``aside``, then ``stage`` renamed to ``out`` (``aside`` put back if that
    fails). Return whether there was an ``out``: the caller deletes ``aside`` then, once
    the new results are in place. Locally (``store`` None) with ``os.rename``; elsewhere
    with Hadoop's ``FileSystem.rename`` (atomic on HDFS; a copy on object stores such as
    S3)."""
    if store is None:
        exists, rename = (lambda p: os.path.lexists(local_path(p))), (
            lambda a, b: os.rename(local_path(a), local_path(b)))
    else:
        exists, rename = store.exists, store.rename
    if exists(aside):
        raise RuntimeError(f"cannot move {out} aside: {aside} exists")
    had = exists(out)
    if had:
        rename(out, aside)
    try:
        rename(stage, out)
    except BaseException:
        if had:
            rename(aside, out)
        raise
    return had
