"""Spark plumbing: the Java check, the session, reading and checking inputs, output paths.

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
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ..preflight import dir_problem

__all__ = [
    "JAVA_HINT",
    "PipelineError",
    "Store",
    "check_input",
    "check_local_out",
    "is_local",
    "java_problem",
    "local_path",
    "not_empty",
    "read_checked",
    "read_parquet",
    "session",
    "under_spark_submit",
]

JAVA_HINT = ("install a JDK 17 (e.g. `apt-get install openjdk-17-jre-headless`) and set "
             "JAVA_HOME (e.g. export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64)")


class PipelineError(Exception):
    """A problem the user can fix (bad argument, bad input); printed without a traceback."""


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


def _log4j2_file() -> str:
    """A file holding :data:`LOG4J2_QUIET` (removed when the interpreter exits)."""
    fd, path = tempfile.mkstemp(prefix="cstrie-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as fh:
        fh.write(LOG4J2_QUIET)
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
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

    def files(self, path: str, suffix: str = ".parquet") -> list[str]:
        """Data files below ``path`` (recursively, skipping ``_``/``.`` names), or ``[path]``
        if it is a file."""
        fs, p = self._fs(path)
        if not fs.getFileStatus(p).isDirectory():
            return [str(p.toString())]
        out = []
        it = fs.listFiles(p, True)
        while it.hasNext():
            q = it.next().getPath()
            name = q.getName()
            if name.endswith(suffix) and not name.startswith(("_", ".")):
                out.append(str(q.toString()))
        return sorted(out)

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


#: Files of a non-local input whose schema is checked one by one.
MAX_SCHEMA_CHECKS = 64

# Spark's simpleString() names of the pyarrow types the inputs may have.
_ARROW_TO_SPARK = {"string": "string", "large_string": "string", "int64": "bigint",
                   "int32": "int", "int16": "smallint", "int8": "tinyint"}


def is_local(path: str) -> bool:
    """Whether ``path`` names the local file system (no scheme, or ``file:``)."""
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(path: str) -> str:
    """The local file system path of a local ``path`` (``file:`` dropped)."""
    return urlparse(path).path if path.startswith("file:") else path


def _schema(spark: Any, f: str, option: str, path: str) -> dict[str, str]:
    """Column name -> Spark type name of one Parquet file."""
    try:
        if is_local(f):
            import pyarrow.parquet as pq

            out = {}
            for fl in pq.read_schema(local_path(f)):
                t = fl.type.value_type if hasattr(fl.type, "value_type") else fl.type
                out[fl.name] = _ARROW_TO_SPARK.get(str(t), str(t))
            return out
        return {fl.name: fl.dataType.simpleString() for fl in read_parquet(spark, f).schema}
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, AnalysisException and friends
        raise PipelineError(f"{option} {path}: cannot read {f} as Parquet: "
                            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                            ) from None


_GLOB = re.compile(r"([\\{}\[\]*?])")


def read_parquet(spark: Any, path: str) -> Any:
    """``spark.read.parquet`` of the literal ``path``: Spark expands glob characters in
    read paths (``out[2]`` would be a character class), so they are escaped."""
    return spark.read.parquet(_GLOB.sub(r"\\\1", path))


@dataclass(frozen=True)
class Column:
    """A required input column: its name, the Spark type names accepted, the cast applied."""

    name: str
    accepted: tuple[str, ...]
    cast: str


def read_checked(spark: Any, store: Store, path: str, option: str,
                 columns: tuple[Column, ...], checked: bool = False) -> Any:
    """Read Parquet ``path`` (a file or a folder) and return the required columns, cast,
    after :func:`check_input` (unless ``checked``: it was called already)."""
    if not checked:
        check_input(path, option, columns, spark, store)
    from pyspark.sql import functions as F

    df = read_parquet(spark, path)
    return df.select(*[F.col(c.name).cast(c.cast).alias(c.name) for c in columns])


def check_input(path: str, option: str, columns: tuple[Column, ...], spark: Any = None,
                store: Store | None = None) -> None:
    """Check that Parquet ``path`` (a file or a folder) has the required columns.

    Errors name ``option``, the file and the column: a path that does not exist, a folder
    without Parquet files, a file without a required column, a column of the wrong type. A
    local path needs neither ``spark`` nor ``store`` (pyarrow reads the footers), so that
    ``route`` checks it before Spark starts.
    """
    if is_local(path):
        files = _local_files(path, option)
    else:
        assert spark is not None and store is not None, "a non-local path is checked by Spark"
        if not store.exists(path):
            raise PipelineError(f"{option} {path}: no such file or directory")
        files = store.files(path)
        if not files:
            raise PipelineError(f"{option} {path}: no .parquet files in this folder")
    # Every file's own schema is checked, so that an error names the file (Spark reads a
    # folder with the schema of one file and would fill a column missing elsewhere with
    # nulls). Local files: a footer read each with pyarrow; other file systems: Spark,
    # for at most MAX_SCHEMA_CHECKS files.
    for f in files if is_local(path) else files[:MAX_SCHEMA_CHECKS]:
        fields = _schema(spark, f, option, path)
        for col in columns:
            if col.name not in fields:
                raise PipelineError(
                    f"{option} {path}: column {col.name!r} is missing in {f} "
                    f"(its columns: {', '.join(fields) or 'none'})")
            if fields[col.name] not in col.accepted:
                raise PipelineError(
                    f"{option} {path}: column {col.name!r} in {f} has type "
                    f"{fields[col.name]}, expected {' or '.join(col.accepted)}")


def _local_files(path: str, option: str) -> list[str]:
    """The data files of local ``path`` as :meth:`Store.files` lists them."""
    local = local_path(path)
    if not os.path.exists(local):
        raise PipelineError(f"{option} {path}: no such file or directory")
    if not os.path.isdir(local):
        return [local]
    files = sorted(os.path.join(folder, name) for folder, _, names in os.walk(local)
                   for name in names
                   if name.endswith(".parquet") and not name.startswith(("_", ".")))
    if not files:
        raise PipelineError(f"{option} {path}: no .parquet files in this folder")
    return files


def not_empty(out: str, present: list[str]) -> PipelineError:
    """The error for an ``--out`` that holds ``present`` and no ``--overwrite``."""
    shown = ", ".join(sorted(present)[:6]) + (", ..." if len(present) > 6 else "")
    return PipelineError(f"--out {out}: not empty (holds {shown}); pass --overwrite to "
                         "replace the pipeline's outputs in it")


def check_local_out(out: str, overwrite: bool) -> None:
    """Check a local ``--out`` without Spark: it can be written (or created), and it is
    empty unless ``overwrite`` (``route`` checks any ``--out`` again through Hadoop)."""
    local = local_path(out)
    why = dir_problem(local)
    if why:
        raise PipelineError(f"--out {out}: {why}")
    present = [n for n in (os.listdir(local) if os.path.isdir(local) else [])
               if not (n.startswith(".") and n.endswith(".crc"))]  # Hadoop's checksums
    if present and not overwrite:
        raise not_empty(out, present)
