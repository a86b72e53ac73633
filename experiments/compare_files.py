"""The workload files of ``compare``: their format, reading and validating them, and writing
the example workloads.

**Subscriptions file**: one subscription per line, ``PATTERN<TAB>SUBSCRIBER``, split at the
line's *last* TAB; a line without a TAB is a pattern alone, whose subscriber is its line
number. Spaces are never separators (an MQTT filter such as ``home/living room/+`` holds
one) and there are no comments (``#`` is the MQTT and AMQP many-level wildcard), so every
legal pattern can be written: a pattern that itself holds a TAB (legal in MQTT and AMQP)
must be followed by ``<TAB>SUBSCRIBER``. **Topics file**: one published topic per line, the
whole line. In both files lines end with LF (a CR before the LF is taken as part of a CRLF
line ending, so a pattern or topic cannot end with CR), the text is UTF-8 without a byte
order mark (a file that starts with one is refused: the mark would be the invisible first
character of its first entry), and empty lines are skipped and counted (``compare`` says how
many; a line of spaces is not empty: it is a pattern or topic, legal in MQTT). The empty string, AMQP's empty routing key (a topic and a
pattern of zero words), is written as two double quotes: a pattern or topic made of double
quotes only stands for itself less two of them (:func:`unquote`), so two quotes are the
empty key and four the one-word key of two quotes. In NATS and MQTT the empty string is
invalid, and a line of two quotes is reported like any bad line.

Every line is checked with the package's own validators (:func:`ctrie.validate_pattern` and
:func:`ctrie.validate_topic`) for the chosen dialect; :func:`read_workload` reports *every*
bad line of both files (``file:line: reason``, the text abbreviated when long), an
unreadable path and a file without entries, all at once, in a :class:`WorkloadError`.
Repeated (pattern, subscriber) lines are legal (subscribing is idempotent) and counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctrie import Dialect, InvalidTopicError, validate_pattern, validate_topic

from . import workloads
from .env import PROJECT_ROOT
from .text import count
from .writing import WriteError, write_all

__all__ = ["EXAMPLES_DIR", "SUBSCRIPTIONS", "TOPICS", "Workload", "WorkloadError",
           "WorkloadFile", "abbreviate", "read_workload", "unquote", "write_example"]

#: The shipped example workloads of a checkout (not installed with the package: an
#: installed package writes them with ``compare --write-example NAME DIR``).
EXAMPLES_DIR = PROJECT_ROOT / "examples"
#: The file names of a workload folder (examples, and ``--write-example``).
SUBSCRIPTIONS, TOPICS = "subscriptions.txt", "topics.txt"


class WorkloadError(Exception):
    """The workload files cannot be measured; ``problems`` holds every reason, one a line."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def abbreviate(text: str, width: int = 60) -> str:
    """``repr(text)``, cut to about ``width`` characters with the length said when longer."""
    if len(text) <= width:
        return repr(text)
    return f"{text[:width - 20]!r}... ({len(text):,} characters)"


def unquote(text: str) -> str:
    """The pattern or topic a line's ``text`` stands for: ``text`` itself, unless it is made
    of two or more double quotes only, which stand for themselves less two (two quotes are
    the empty string, four are two quotes), so that every string can be written."""
    return text[2:] if len(text) >= 2 and not text.strip('"') else text


@dataclass(frozen=True)
class WorkloadFile:
    """One file read: its path, its number of lines, of entries (non-empty lines), of blank
    (empty, skipped) lines, its SHA-256."""

    path: Path
    lines: int
    entries: int
    sha256: str
    blank: int = 0

    def params(self) -> dict[str, Any]:
        return {"name": self.path.name, "path": str(self.path), "lines": self.lines,
                "entries": self.entries, "blank_lines": self.blank, "sha256": self.sha256}


@dataclass(frozen=True)
class Workload:
    """A validated workload: the subscriptions and topics in file order, in one dialect."""

    name: str
    dialect: str
    subscriptions: list[tuple[str, Hashable]]
    topics: list[str]
    files: dict[str, WorkloadFile]
    #: Lines repeating an earlier (pattern, subscriber) pair.
    duplicates: int
    #: The most words of any pattern or topic (the optimized bitmap's size).
    max_words: int

    @property
    def patterns(self) -> list[str]:
        """The distinct patterns, in file order."""
        return list(dict.fromkeys(p for p, _ in self.subscriptions))

    def params(self) -> dict[str, Any]:
        """What every record of the workload carries in ``params``."""
        return {"workload": self.name, "files": {k: f.params() for k, f in self.files.items()},
                "subscriptions": len(self.subscriptions),
                "distinct_patterns": len(self.patterns), "duplicate_lines": self.duplicates,
                "topics": len(self.topics), "distinct_topics": len(set(self.topics)),
                "max_words": self.max_words}

    def describe(self) -> str:
        p = self.params()
        dup = (f" ({count(p['duplicate_lines'], 'repeated line')}, stored once)"
               if p["duplicate_lines"] else "")
        return (f"workload {self.name!r} ({self.dialect}): "
                f"{count(p['subscriptions'], 'subscription')}{dup} of "
                f"{count(p['distinct_patterns'], 'pattern')}, {count(p['topics'], 'topic')} "
                f"({p['distinct_topics']:,} distinct)")


#: The UTF-8 byte order mark some editors put at the start of a file: refused, as it would
#: silently be the first character of the first pattern or topic.
BOM = b"\xef\xbb\xbf"

#: A problem found in a file: (line number, 0 for the whole file; the message).
Problem = tuple[int, str]


def _lines(path: Path, problems: list[Problem]
           ) -> tuple[list[tuple[int, str]], WorkloadFile | None]:
    """The (line number, text) of every non-empty line, and the file's facts (blank lines
    counted); problems of reading and decoding are appended to ``problems``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append((0, f"{path}: cannot read it: {exc.strerror or exc}"))
        return [], None
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()  # the newline that ends the last line
    out = []
    blank = 0
    for number, line in enumerate(raw, 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            blank += 1
            continue
        if number == 1 and line.startswith(BOM):
            problems.append((number, f"{path}:{number}: the file starts with a byte order "
                                     "mark (U+FEFF, invisible): save it as UTF-8 without "
                                     "BOM (U+FEFF is read as part of the first entry)"))
            continue
        try:
            out.append((number, line.decode("utf-8")))
        except UnicodeDecodeError as exc:
            problems.append((number, f"{path}:{number}: not UTF-8 (byte {exc.start + 1} of "
                                     f"the line: {line[exc.start:exc.start + 1]!r})"))
    return out, WorkloadFile(path, len(raw), len(out), hashlib.sha256(data).hexdigest(), blank)


def _invalid(path: Path, number: int, exc: InvalidTopicError) -> Problem:
    return number, (f"{path}:{number}: invalid {exc.dialect} {exc.kind} "
                    f"{abbreviate(exc.value)}: {exc.rule}")


def read_workload(subscriptions: Path, topics: Path, dialect: str,
                  name: str | None = None) -> Workload:
    """Read and validate both files; raise :class:`WorkloadError` with every problem, the
    subscriptions file's first, each file's in line order.

    ``name`` defaults to the subscriptions file's folder name when the file is called
    ``subscriptions.txt`` (as in ``examples/<name>/``), else to the file's stem.
    """
    sub_path, top_path = Path(subscriptions), Path(topics)
    sub_problems: list[Problem] = []
    top_problems: list[Problem] = []
    sub_lines, sub_file = _lines(sub_path, sub_problems)
    top_lines, top_file = _lines(top_path, top_problems)
    subs: list[tuple[str, Hashable]] = []
    most = 0
    d = Dialect.coerce(dialect)
    for number, text in sub_lines:
        pattern, tab, named = text.rpartition("\t")
        who: Hashable = named
        if not tab:
            pattern, who = text, number
        pattern = unquote(pattern)
        if tab and not named:
            sub_problems.append((number, f"{sub_path}:{number}: empty subscriber after the "
                                         "last TAB (the line is PATTERN<TAB>SUBSCRIBER, or "
                                         "PATTERN alone)"))
            continue
        try:
            most = max(most, len(validate_pattern(pattern, d)))
        except InvalidTopicError as exc:
            sub_problems.append(_invalid(sub_path, number, exc))
            continue
        subs.append((pattern, who))
    tops: list[str] = []
    for number, text in top_lines:
        text = unquote(text)
        try:
            most = max(most, len(validate_topic(text, d)))
        except InvalidTopicError as exc:
            top_problems.append(_invalid(top_path, number, exc))
            continue
        tops.append(text)
    for f, what, found in ((sub_file, "subscriptions", sub_problems),
                           (top_file, "topics", top_problems)):
        if f is not None and not f.entries:
            found.append((0, f"{f.path}: no {what} (the file is empty or has only empty "
                             "lines; the AMQP empty key is written \"\")"))
    problems = [m for _, m in sorted(sub_problems)] + [m for _, m in sorted(top_problems)]
    if problems:
        raise WorkloadError(problems)
    assert sub_file is not None and top_file is not None
    return Workload(
        name=name or (sub_path.resolve().parent.name if sub_path.name == SUBSCRIPTIONS
                      else sub_path.stem),
        dialect=dialect, subscriptions=subs, topics=tops,
        files={"subscriptions": sub_file, "topics": top_file},
        duplicates=len(subs) - len(set(subs)), max_words=most)


def write_example(name: str, folder: Path, seed: int = workloads.EXAMPLE_SEED,
                  overwrite: bool = False) -> list[Path]:
    """Write the example workload ``name`` (see :data:`experiments.workloads.EXAMPLES`) as
    ``folder/subscriptions.txt`` and ``folder/topics.txt``; return the two paths. Raise
    :class:`experiments.writing.WriteError`, having written nothing, when ``folder`` is not
    a folder, or holds either file and ``overwrite`` is false."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise WriteError(f"{folder} exists and is not a directory")
    paths = [folder / SUBSCRIPTIONS, folder / TOPICS]
    present = [p.name for p in paths if p.exists()]
    if present and not overwrite:
        raise WriteError(f"{folder} already holds {' and '.join(present)}; pass --overwrite "
                         "to replace them")
    make, _ = workloads.EXAMPLES[name]
    wl = make(seed)
    for pattern, who in wl.subscriptions:
        assert "\n" not in pattern and not set(who) & {"\t", "\n"}, (pattern, who)
    return write_all({
        paths[0]: "".join(f"{p}\t{w}\n" for p, w in wl.subscriptions).encode(),
        paths[1]: "".join(f"{t}\n" for t in wl.topics).encode()})
