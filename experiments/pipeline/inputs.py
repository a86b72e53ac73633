"""A route's inputs: which files a Parquet input is made of, their checks, their row
counts, and the dialect a workload records.

An input folder is what Spark would read of it (:func:`check_input`): every file below it
but the hidden ones (:func:`sparkutil.is_hidden`); each file's footer is read before
anything else happens (local paths before Spark starts), so that a bad file is one line
naming it, and the footers' row counts are what ``route`` reconciles its figures against.
Spark is then handed that very list of files (:func:`read_input`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from .sparkutil import PipelineError, Store, is_hidden, is_local, literal, local_path, read_parquet

__all__ = ["MANIFEST", "MESSAGE_COLUMNS", "SUBSCRIPTION_COLUMNS", "Column", "InputFiles",
           "check_input", "choose_dialect", "input_dialect", "read_input"]

#: Files of a non-local input whose schema is checked one by one.
MAX_SCHEMA_CHECKS = 64

# Spark's simpleString() names of the pyarrow types the inputs may have.
_ARROW_TO_SPARK = {"string": "string", "large_string": "string", "int64": "bigint",
                   "int32": "int", "int16": "smallint", "int8": "tinyint"}


@dataclass(frozen=True)
class Column:
    """A required input column: its name, the Spark type names accepted, the cast applied."""

    name: str
    accepted: tuple[str, ...]
    cast: str


#: The columns ``route`` reads of ``--subscriptions`` and of ``--messages``.
SUBSCRIPTION_COLUMNS = (Column("pattern", ("string",), "string"),
                        Column("subscriber", ("string",), "string"))
MESSAGE_COLUMNS = (Column("message_id", ("bigint", "int", "smallint", "tinyint"), "bigint"),
                   Column("topic", ("string",), "string"))


@dataclass(frozen=True)
class InputFiles:
    """One input as the run reads it: exactly these files, holding ``rows`` rows by their
    Parquet footers (the count the routed figures are reconciled against)."""

    path: str
    option: str
    files: tuple[str, ...]
    rows: int
    #: The subfolders (relative to ``path``) whose files are read.
    folders: tuple[str, ...]
    #: Hidden entries (relative to ``path``, a folder with a final ``/``) skipped as Spark
    #: skips them, but for Spark's and Hadoop's own (``_SUCCESS``, ``.crc``...).
    hidden: tuple[str, ...]
    #: How ``rows`` was counted.
    counted_by: str

    def describe(self) -> str:
        """``3 files, 20000 rows by their footers; subfolders read: old, date=2026-11-01``."""
        text = (f"{len(self.files)} file{'s' * (len(self.files) != 1)}, {self.rows} rows by "
                "their footers")
        if self.folders:
            shown = ", ".join(self.folders[:5]) + (", ..." if len(self.folders) > 5 else "")
            text += f"; subfolders read: {shown}"
        if self.hidden:
            shown = ", ".join(self.hidden[:5]) + (", ..." if len(self.hidden) > 5 else "")
            text += f"; hidden, not read: {shown}"
        return text


def read_input(spark: Any, inp: InputFiles, columns: tuple[Column, ...]) -> Any:
    """The required columns, cast, of exactly the files of ``inp`` (Spark is handed the
    file list, not the folder, so that it reads what was checked and counted)."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(*[literal(f) for f in inp.files])
    return df.select(*[F.col(c.name).cast(c.cast).alias(c.name) for c in columns])


def check_input(path: str, option: str, columns: tuple[Column, ...], spark: Any = None,
                store: Store | None = None) -> InputFiles:
    """List the files of Parquet input ``path`` (a file or a folder), check each, and count
    their rows by the footers.

    A folder's files are all files below it, at any depth, but hidden ones
    (:func:`is_hidden`, as Spark skips them): plain subfolders are read, and partition
    folders (``date=2026-11-01/``) too, their ``key=value`` being no column the route
    needs. Every one of them must be Parquet with the required columns; errors are one line
    naming ``option``, the file and the column: a path that does not exist, a folder without
    data files, a file that is not Parquet (a stray ``README``, an empty file), a file
    without a required column, a column of the wrong type, a local file that no longer
    matches the Hadoop checksum file beside it (:func:`_check_crc`).

    A local path needs neither ``spark`` nor ``store`` (pyarrow reads every footer), so that
    ``route`` checks it before Spark starts. On another file system the files are listed
    and every footer is read through Hadoop (parquet-hadoop in the JVM), and the schemas of
    the first :data:`MAX_SCHEMA_CHECKS` files are checked by Spark.
    """
    local = is_local(path)
    if local:
        files, relative, hidden = _local_files(path, option)
        folder = os.path.isdir(local_path(path))
        counted_by = "Parquet footers read with pyarrow"
    else:
        if spark is None or store is None:
            raise ValueError("a non-local path is checked through Spark: pass spark and store")
        if not store.exists(path):
            raise PipelineError(f"{option} {path}: no such file or directory")
        files, relative, hidden = store.files(path)
        folder = store.is_dir(path)
        if not files:
            raise PipelineError(f"{option} {path}: {_NO_FILES}")
        counted_by = "Parquet footers read through Hadoop (parquet-hadoop in Spark's JVM)"
    rows = 0
    fields: dict[str, str] | None
    for i, f in enumerate(files):
        where = (option, path, f, folder)
        if local:
            _check_crc(f, where)
            fields, n = _local_footer(f, where)
        else:
            assert store is not None  # a non-local path needs it (checked above)
            n = _hadoop_rows(store, f, where)
            # Every file's own schema is checked where affordable, so that an error names
            # the file (Spark reads a folder with the schema of one file and would fill a
            # column missing elsewhere with nulls).
            fields = _schema(spark, f, where) if i < MAX_SCHEMA_CHECKS else None
        rows += n
        if fields is None:  # past MAX_SCHEMA_CHECKS of a non-local folder: rows only
            continue
        for col in columns:
            if col.name not in fields:
                raise PipelineError(
                    f"{option} {path}: column {col.name!r} is missing in {f} "
                    f"(its columns: {', '.join(fields) or 'none'})")
            if fields[col.name] not in col.accepted:
                raise PipelineError(
                    f"{option} {path}: column {col.name!r} in {f} has type "
                    f"{fields[col.name]}, expected {' or '.join(col.accepted)}")
    folders = sorted({r.rpartition("/")[0] for r in relative} - {""})
    return InputFiles(path, option,
                      tuple(f"file:{os.path.abspath(f)}" if local else f for f in files), rows,
                      tuple(folders), tuple(h for h in hidden if not _BOOKKEEPING.match(h)),
                      counted_by)


#: Hidden files that Spark and Hadoop write themselves: skipped without a mention.
_BOOKKEEPING = re.compile(r"(.*/)?(_SUCCESS|_committed_.*|_started_.*|\..*\.crc)$")

_NO_FILES = ("no data files in this folder (names starting with _ or . are skipped, as "
             "Spark skips them)")
_STRAY = ("route reads every file below the folder whose name does not start with _ or .: "
          "move it out, or rename it to start with _")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


#: What a file's error names: the option, the input path, the file, whether the input is a
#: folder (then the error says how a stray file is kept out).
_Where = tuple[str, str, str, bool]


def _not_parquet(where: _Where, why: str) -> PipelineError:
    option, path, f, folder = where
    hint = f" ({_STRAY})" if folder else ""
    return PipelineError(f"{option} {path}: cannot read {f} as Parquet: {why}{hint}")


def _local_footer(f: str, where: _Where) -> tuple[dict[str, str], int]:
    """Column name -> Spark type name, and the row count, of local Parquet file ``f``."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(f)
        schema = meta.schema.to_arrow_schema()
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, OSError and friends
        raise _not_parquet(where, _one_line(exc)) from None
    out = {}
    for fl in schema:
        t = fl.type.value_type if hasattr(fl.type, "value_type") else fl.type
        out[fl.name] = _ARROW_TO_SPARK.get(str(t), str(t))
    return out, meta.num_rows


#: The header of a Hadoop checksum file (``ChecksumFileSystem``'s ``CHECKSUM_VERSION``).
_CRC_MAGIC = b"crc\0"


def _check_crc(f: str, where: _Where) -> None:
    """Check local file ``f`` against the Hadoop checksum file beside it (``.NAME.crc``), if
    there is one, as Hadoop's local file system checks every read: a header ``crc\\0``, the
    bytes per checksum (big-endian int32), then the CRC-32 of each chunk of that many bytes
    (big-endian uint32). Raise a one-line :class:`PipelineError` where Hadoop would refuse
    the file (``ChecksumException``): a chunk whose CRC differs, or fewer checksums than
    chunks. A checksum file without that header and a positive chunk size (empty, cut short,
    another header) is refused too: Hadoop means to ignore it, but Spark 4.3's fails reading
    the file's columns beside it (``EOFException: Read past End of File``, ``/ by zero``).
    Reads the whole file (1.25-2 s per GB measured on this project's 2-core machine)."""
    import zlib

    folder, name = os.path.split(f)
    crc = os.path.join(folder, f".{name}.crc")
    try:
        with open(crc, "rb") as fh:
            sums = fh.read()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise PipelineError(f"{where[0]} {where[1]}: cannot read {crc}, the checksum file of "
                            f"{f}: {exc.strerror or exc}") from None
    step = int.from_bytes(sums[4:8], "big", signed=True) if len(sums) >= 8 else 0
    if sums[:4] != _CRC_MAGIC or step <= 0:
        raise PipelineError(
            f"{where[0]} {where[1]}: {crc}, beside {f}, is no Hadoop checksum file (it should "
            f"start with 'crc\\0' and a positive chunk size; it starts with {sums[:8]!r}), and "
            "Spark fails reading a file beside such a file: delete it")
    bad = None
    with open(f, "rb") as fh:
        offset, i = 0, 8
        while step > 0 and (chunk := fh.read(step)):
            want = sums[i:i + 4]
            if len(want) < 4 or int.from_bytes(want, "big") != zlib.crc32(chunk):
                bad = offset
                break
            offset, i = offset + len(chunk), i + 4
    if bad is not None:
        raise PipelineError(
            f"{where[0]} {where[1]}: {f} does not match its Hadoop checksum file {crc} "
            f"(from byte {bad}; was the file rewritten by a tool that left the old checksum?), "
            "and Spark would refuse to read it: if the file is as it should be, delete the "
            ".crc file; otherwise rewrite the file")


def _hadoop_rows(store: Store, f: str, where: _Where) -> int:
    try:
        return store.parquet_rows(f)
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError
        java = getattr(exc, "java_exception", None)
        raise _not_parquet(where, _one_line(java.toString() if java is not None else exc)
                           ) from None


def _schema(spark: Any, f: str, where: _Where) -> dict[str, str]:
    """Column name -> Spark type name of one Parquet file, as Spark reads it."""
    try:
        return {fl.name: fl.dataType.simpleString() for fl in read_parquet(spark, f).schema}
    except Exception as exc:  # noqa: BLE001 - AnalysisException and friends
        raise _not_parquet(where, _one_line(exc)) from None


def _local_files(path: str, option: str) -> tuple[list[str], list[str], list[str]]:
    """The files of local ``path`` as :meth:`Store.files` lists them; symbolic links to
    folders are followed (Hadoop's local file system follows them), and a folder reached
    twice is refused (its files would be read twice)."""
    local = local_path(path)
    if not os.path.exists(local):
        raise PipelineError(f"{option} {path}: no such file or directory")
    if not os.path.isdir(local):
        return [local], [os.path.basename(local)], []

    def fail(err: OSError) -> None:
        raise PipelineError(f"{option} {path}: cannot list {err.filename}: "
                            f"{err.strerror or err}")

    found: list[tuple[str, str]] = []
    hidden: list[str] = []
    seen: dict[str, str] = {}
    for folder, dirs, names in os.walk(local, onerror=fail, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            raise PipelineError(f"{option} {path}: {folder} is {seen[real]} again (through a "
                                "symbolic link): its files would be read twice")
        seen[real] = folder
        rel = os.path.relpath(folder, local)
        rel = "" if rel == "." else rel + "/"
        hidden.extend(f"{rel}{d}/" for d in dirs if is_hidden(d))
        hidden.extend(f"{rel}{n}" for n in names if is_hidden(n))
        dirs[:] = [d for d in dirs if not is_hidden(d)]
        found.extend((f"{rel}{n}", os.path.join(folder, n)) for n in names if not is_hidden(n))
    if not found:
        raise PipelineError(f"{option} {path}: {_NO_FILES}")
    found.sort()
    return [f for _, f in found], [r for r, _ in found], sorted(hidden)


#: Where ``generate`` records a workload's parameters, beside its ``messages/`` and
#: ``subscriptions/`` folders.
MANIFEST = "workload.json"


def _parent(path: str) -> str:
    """The folder holding ``path`` (a local path or a URI)."""
    if is_local(path):
        return os.path.dirname(os.path.abspath(local_path(path).rstrip("/") or "/"))
    return path.rstrip("/").rpartition("/")[0]


def _recorded_dialects(paths: list[str], store: Store | None
                       ) -> tuple[dict[str, str], list[str]]:
    """``workload.json`` beside each of ``paths`` -> the dialect it records (local files
    read by Python, others through ``store``), and notes on files of that name that are no
    manifest of ``generate`` (left out)."""
    from ctrie import Dialect

    found: dict[str, str] = {}
    notes: list[str] = []
    for folder in dict.fromkeys(_parent(p) for p in paths):
        manifest = f"{folder.rstrip('/')}/{MANIFEST}"
        try:
            if store is None:
                if not os.path.isfile(manifest):
                    continue
                with open(manifest, encoding="utf-8") as fh:
                    text = fh.read()
            else:
                if not store.exists(manifest):
                    continue
                text = store.read_text(manifest)
            dialect = json.loads(text)["workload"]["dialect"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            notes.append(f"note: {manifest} ignored: no workload dialect in it "
                         f"({type(exc).__name__}: {exc})")
            continue
        if dialect not in {d.value for d in Dialect}:
            raise PipelineError(f"{manifest}: records dialect {dialect!r}, which is none of "
                                f"{', '.join(d.value for d in Dialect)}")
        found[manifest] = dialect
    return found, notes


def input_dialect(given: str | None, mismatch_ok: bool, paths: list[str],
                  store: Store | None) -> tuple[str, str, list[str]]:
    """The dialect to route ``paths`` with (see :func:`choose_dialect`), where it comes
    from, and the lines that say so."""
    recorded, notes = _recorded_dialects(paths, store)
    dialect, source = choose_dialect(given, recorded, mismatch_ok)
    return dialect, source, [*notes, f"dialect {dialect} ({source})"]


def choose_dialect(given: str | None, recorded: dict[str, str],
                   mismatch_ok: bool) -> tuple[str, str]:
    """The dialect to route with and where it comes from: ``given`` (``--dialect``) or
    the one ``recorded`` in the inputs' ``workload.json`` (file -> dialect), else ``nats``.
    ``given`` contradicting a recorded dialect is refused unless ``mismatch_ok``."""
    if given is None:
        if not recorded:
            return "nats", f"the default: no {MANIFEST} beside the inputs"
        if len(set(recorded.values())) > 1:
            raise PipelineError(f"the inputs' {MANIFEST} files disagree ("
                                + ", ".join(f"{m}: {d}" for m, d in recorded.items())
                                + "): pass --dialect")
        return next(iter(recorded.values())), f"from {', '.join(recorded)}"
    other = {m: d for m, d in recorded.items() if d != given}
    if not other:
        return given, "--dialect" + (f", as {', '.join(recorded)} says" if recorded else "")
    manifest, dialect = next(iter(other.items()))
    if not mismatch_ok:
        raise PipelineError(f"--dialect {given}: {manifest} records the workload as {dialect}"
                            f"; route without --dialect to use {dialect}, or pass "
                            f"--dialect-mismatch-ok to route it as {given} anyway")
    return given, f"--dialect, although {manifest} says {dialect} (--dialect-mismatch-ok)"
