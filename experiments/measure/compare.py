"""``compare``: the matchers on *your* workload, a file of subscriptions and a file of topics.

Broker engineers want the answer for their subjects, not for random 5-word topics::

    python -m experiments compare --subscriptions subs.txt --topics topics.txt \\
        [--dialect nats|mqtt|amqp] [--algorithms LIST] [--baseline NAME] [--threads 1,2]
        [--write-shares 0,0.1] [--rounds N] [--ops N] [--out DIR] [--chart FILE] [--seed N]

(``cstrie-experiments compare ...`` once the package is installed.)

**Files.** The subscriptions file holds one ``PATTERN<TAB>SUBSCRIBER`` a line (split at the
last TAB; a line without a TAB is a pattern whose subscriber is its line number), the topics
file one published topic a line; UTF-8, empty lines skipped (and counted on stderr), no
comments, spaces are part of the text; the empty string (the AMQP empty routing key) is
written as two double quotes (see :mod:`experiments.compare_files`). Both files are validated in full before
anything is measured, with the package's validators for ``--dialect``: every bad line is
printed (``file:line: reason``), and the command exits with status 2 having written nothing.

**What is measured**, for each of ``--algorithms`` (default: :data:`DEFAULT_ALGORITHMS`),
each round on a fresh matcher holding every subscription of the file (populated untimed),
after one untimed pass looking up every topic of the file (a broker in its steady state:
result caches warm):

- ``lookup-latency`` (ns per lookup): one pass over the topics file in file order, timed with
  ``perf_counter`` in batches of :data:`LATENCY_BATCH` topics; a value is a batch's time over
  its topics (the loop and the clock reads, about 17 ns a lookup on 3.11 and 29 ns on
  3.13t here, are included for every matcher alike);
- ``lookup-throughput`` (lookups/s): the same pass, topics over the pass's time, one value a
  round;
- ``threaded/w<share>`` (ops/s, all threads together) at each of ``--threads`` and
  ``--write-shares``: one :func:`experiments.measure.rounds.timed_round` a round, each thread
  ``--ops`` operations. An operation is a write with probability ``share`` (seeded per
  thread), else a lookup of the next topic of the file (thread ``k`` of ``n`` starts at
  ``k/n`` of it; its own copies of the strings, made by the main thread). A thread's writes
  come in pairs on one pattern of the file drawn at random: the first subscribes the
  thread's fresh subscriber ``("compare-writer", k)``, which no line of a file can name, the
  second unsubscribes it, so every write changes the matcher. The real write share is
  recorded. Each thread looks up its first topic before the round's barrier, untimed (a
  ``ReplicatedTrie`` makes its replica for the thread then, as a long-lived broker thread
  does once). paho's ``MQTTMatcher`` is not thread-safe: its cells above one thread are
  recorded as skipped. The workers read a matcher, and strings, that the main thread made,
  as a broker's threads share one matcher: on free-threaded 3.13 that costs reads (see the
  ``sharing`` experiment), so there the 1-thread cell can fall below the single-thread
  throughput (CS-trie, mqtt-sensors: about 91k ops/s against 121k lookups/s).

Before timing, each matcher's answers for the first :data:`ORACLE_TOPICS` topics (fewer for
a file of more than 3,000 distinct patterns: :data:`ORACLE_BUDGET`) are compared with the
reference :func:`ctrie.matches` over the subscriptions it accepted; disagreements
are recorded (``params.oracle_mismatches``) and printed. A matcher that cannot represent a
pattern (``ctrie.UnsupportedPatternError``: the optimized bitmap with an AMQP ``#`` inside a
pattern) refuses it; refusals are counted per matcher (``params.refused_patterns``), said on
the terminal, and its threaded writes draw only from the patterns it accepted. The inverted
bitmap's topic space is the topics file; the optimized bitmap is sized for the longest
pattern or topic.

**Records** go to ``--out`` (default ``results/``) as for every experiment
(:class:`experiments.env.Run`, experiment ``compare``, size ``custom``): ``values`` are the
per-batch or per-round figures, ``params`` holds the quartiles (``q1``, ``q3``), the
workload's name and, per file, its name, path, line count and SHA-256. The terminal table
(:mod:`experiments.report.compare`) has one row per cell: median, quartiles, and the ratio
to ``--baseline`` (default ``locked_trie``) taken so that above 1 is better than the
baseline (its median time over this one; this rate over its rate). The chart is a PNG
beside the records (or ``--chart FILE``); without matplotlib (the free-threaded venv) the
command says so and still writes the records and prints the table.

**Examples.** ``examples/nats-inbox/`` (NATS request/reply: service subjects and reply
inboxes) and ``examples/mqtt-sensors/`` (an MQTT sensor tree), made by
:data:`experiments.workloads.EXAMPLES` with seed 1. They live in the checkout, not in the
installed package; ``compare --write-example NAME DIR`` writes the same bytes anywhere
(``--overwrite`` replaces them in a folder that holds them; the tests check that
regenerating gives the shipped files)::

    python -m experiments compare --write-example nats-inbox examples/nats-inbox --overwrite
    python -m experiments compare --subscriptions examples/nats-inbox/subscriptions.txt \\
        --topics examples/nats-inbox/topics.txt
    python -m experiments compare --dialect mqtt --algorithms cstrie,locked_trie,paho \\
        --subscriptions examples/mqtt-sensors/subscriptions.txt \\
        --topics examples/mqtt-sensors/topics.txt
"""

from __future__ import annotations

import argparse
import gc
import textwrap
from collections.abc import Hashable
from dataclasses import dataclass
from itertools import cycle
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ctrie import Dialect, matches

from .. import registry, workloads
from ..argtypes import (choices_list, int_list, out_dir, out_file, positive_int, python_arg,
                        seed_arg, share_list)
from ..env import Run
from ..progress import bar
from ..text import count
from .rounds import add_hit_share, store_cpu, timed_round
from .sharing import spread

if TYPE_CHECKING:
    from ..compare_files import Workload

__all__ = ["DEFAULT_ALGORITHMS", "EXPERIMENT", "LATENCY", "THROUGHPUT", "Options",
           "add_parser", "measure", "options", "threaded_workload"]

EXPERIMENT = "compare"
LATENCY, THROUGHPUT = "lookup-latency", "lookup-throughput"
DEFAULT_ALGORITHMS = ("cstrie", "cstrie_cache", "locked_trie", "locked_trie_nocache")
DEFAULT_BASELINE = "locked_trie"
DEFAULT_THREADS = (1, 2)
DEFAULT_WRITE_SHARES = (0.0, 0.1)
DEFAULT_ROUNDS = 5
DEFAULT_OPS = 5000
#: Topics per timed batch of the single-thread lookup pass.
LATENCY_BATCH = 100
#: Topics whose answers are checked against the reference matcher, at most; fewer when
#: topics x distinct patterns would exceed ORACLE_BUDGET calls of ctrie.matches (a few µs each).
ORACLE_TOPICS, ORACLE_BUDGET = 100, 300_000
#: Who writes in thread ``k`` of a threaded round (a tuple: no line of a file names it).
WRITER = "compare-writer"


def threaded_workload(share: float) -> str:
    """The ``workload`` of a threaded cell: ``threaded/w0``, ``threaded/w0.1``, ..."""
    return f"threaded/w{share:g}"


@dataclass(frozen=True)
class Options:
    """What to measure: the matchers, the baseline, the threaded cells, rounds and lengths."""

    algorithms: list[str]
    baseline: str
    threads: list[int]
    write_shares: list[float]
    rounds: int
    ops: int
    seed: int


def options(args: argparse.Namespace) -> Options:
    """The options of a parsed ``compare`` command line (the baseline is always measured)."""
    algorithms = [a for a in registry.ALGORITHMS
                  if a in args.algorithms or a == args.baseline]
    return Options(algorithms, args.baseline, list(args.threads), list(args.write_shares),
                   args.rounds, args.ops, args.seed)


_EPILOG = f"""\
files:
  subscriptions  PATTERN<TAB>SUBSCRIBER a line, split at the line's last TAB; a line
                 without a TAB is a pattern whose subscriber is its line number (a pattern
                 holding a TAB, legal in MQTT and AMQP, needs <TAB>SUBSCRIBER after it)
  topics         one published topic a line, the whole line
  both           UTF-8 (no byte order mark); lines end with LF (CRLF accepted); empty
                 lines are skipped (and counted on stderr); no comments ('#' is a
                 wildcard); spaces are text, never separators
  empty key      AMQP's empty routing key (the empty string, as a topic or a pattern) is
                 written "" (two double quotes): a pattern or topic of double quotes only
                 stands for itself less two quotes (four quotes are the word ""); in
                 nats and mqtt, where the empty string is invalid, "" is a bad line

measured (each round on a fresh matcher holding every subscription, after an untimed
pass over the topics):
  lookup-latency     ns per lookup, a value per batch of {LATENCY_BATCH} topics of the file
  lookup-throughput  lookups per second over the whole topics file, a value per round
  threaded/w<share>  ops/s of all threads at each --threads and --write-shares; a write
                     subscribes, then unsubscribes, a fresh subscriber to a pattern of the
                     file; paho (not thread-safe) is skipped above one thread
The table: median, q1 - q3, and the ratio to --baseline, above 1 = better. Records go to
--out like every experiment's (experiment "compare"); the chart beside them.

examples (in a checkout; --write-example writes the same bytes anywhere):
  python -m experiments compare --subscriptions examples/nats-inbox/subscriptions.txt \\
      --topics examples/nats-inbox/topics.txt
  python -m experiments compare --dialect mqtt --algorithms cstrie,locked_trie,paho \\
      --subscriptions examples/mqtt-sensors/subscriptions.txt \\
      --topics examples/mqtt-sensors/topics.txt
  python -m experiments compare --write-example nats-inbox examples/nats-inbox --overwrite
"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``compare`` to the harness's subcommands, with the argument types every command
    uses (:mod:`experiments.argtypes`), so that every command words its errors alike."""
    p = sub.add_parser(
        "compare", help="the matchers on your own subscriptions and topics files",
        description=textwrap.fill(
                    "Measure the matchers on your workload: a file of subscriptions and a "
                    "file of published topics. Both files are validated in full first, "
                    "with the package's validators for --dialect: every bad line is printed "
                    "as file:line: reason, and the command exits with status 2 having "
                    "measured and written nothing. Then it prints a table (median, "
                    "quartiles, ratio to --baseline), draws a chart and writes records "
                    "like every other experiment.", 88),
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--subscriptions", metavar="FILE", help="PATTERN<TAB>SUBSCRIBER a line")
    p.add_argument("--topics", metavar="FILE", help="one published topic a line")
    p.add_argument("--dialect", choices=("nats", "mqtt", "amqp"), default="nats",
                   help="the dialect of both files (default: nats)")
    p.add_argument("--name", default=None, help="the workload's name in records and table "
                   "(default: the folder of a subscriptions.txt, else the file's stem)")
    p.add_argument("--algorithms", type=choices_list(registry.ALGORITHMS), default=list(DEFAULT_ALGORITHMS),
                   metavar="LIST", help=f"comma-separated, from {', '.join(registry.ALGORITHMS)}"
                   f" (default: {','.join(DEFAULT_ALGORITHMS)})")
    p.add_argument("--baseline", choices=registry.ALGORITHMS, default=DEFAULT_BASELINE,
                   metavar="NAME", help="the ratios' reference, measured even when not in "
                   f"--algorithms (default: {DEFAULT_BASELINE})")
    p.add_argument("--threads", type=int_list, default=list(DEFAULT_THREADS),
                   metavar="LIST", help="thread counts of the threaded rounds (default: 1,2)")
    p.add_argument("--write-shares", type=share_list, default=list(DEFAULT_WRITE_SHARES),
                   metavar="LIST", help="write shares of the threaded rounds (default: 0,0.1)")
    p.add_argument("--rounds", type=positive_int, default=DEFAULT_ROUNDS, metavar="N",
                   help=f"rounds per cell, each on a fresh matcher (default: {DEFAULT_ROUNDS})")
    p.add_argument("--ops", type=positive_int, default=DEFAULT_OPS, metavar="N",
                   help=f"operations per thread per threaded round (default: {DEFAULT_OPS})")
    p.add_argument("--out", type=out_dir, default=None, metavar="DIR",
                   help="results root; records go to DIR/<version>-<gil|ft>/ "
                        "(default: results/ of the checkout)")
    p.add_argument("--chart", type=out_file, default=None, metavar="FILE",
                   help="where the chart goes (default: beside the records)")
    p.add_argument("--seed", type=seed_arg, default=workloads.EXAMPLE_SEED, metavar="N",
                   help="seed of the threaded plans and of --write-example (default: 1)")
    p.add_argument("--python", type=python_arg, default=None, metavar="PATH",
                   help="run under the interpreter PATH instead (e.g. .venv-ft/bin/python)")
    p.add_argument("--write-example", nargs=2, metavar=("NAME", "DIR"), default=None,
                   help=f"write the example workload NAME ({', '.join(workloads.EXAMPLES)}) "
                        "as DIR/subscriptions.txt and DIR/topics.txt, and stop")
    p.add_argument("--overwrite", action="store_true",
                   help="with --write-example: replace DIR/subscriptions.txt and "
                        "DIR/topics.txt when DIR holds them (refused otherwise)")
    return p


# --- measuring ------------------------------------------------------------------------------


class _Writer:
    """A thread's view of the matcher in a threaded round: lookups go to the matcher, and
    its writes alternate subscribe and unsubscribe (the plan gives both of a pair one
    pattern)."""

    __slots__ = ("lookup", "_next")

    def __init__(self, m: Any) -> None:
        self.lookup = m.lookup
        self._next = cycle((m.subscribe, m.unsubscribe)).__next__

    def subscribe(self, pattern: str, who: Hashable) -> None:
        self._next()(pattern, who)


def _plan(wl: Workload, accepted: list[str], share: float, k: int, n: int, ops: int,
          seed: int) -> list[tuple[bool, str]]:
    """Thread ``k`` of ``n``'s operations: (is a write, pattern or topic)."""
    r = workloads.rng(seed, f"compare-{share:g}-{k}")
    topics, start = wl.topics, k * len(wl.topics) // n
    out, pattern, writes = [], "", 0
    for j in range(ops):
        if accepted and r.random() < share:
            if writes % 2 == 0:
                pattern = r.choice(accepted)
            out.append((True, pattern.encode().decode()))
            writes += 1
        else:
            out.append((False, topics[(start + j) % len(topics)].encode().decode()))
    return out


class _Cells:
    """The measurement of one workload: builds matchers, checks answers, writes records."""

    def __init__(self, run: Run, wl: Workload, opts: Options, progress: Any) -> None:
        self.run, self.wl, self.opts, self.progress = run, wl, opts, progress
        self.pats = [p for p, _ in wl.subscriptions]
        self.whos = [w for _, w in wl.subscriptions]
        self.space = list(dict.fromkeys(wl.topics))
        self.refused: dict[str, list[str]] = {}
        self.checked: dict[str, dict[str, Any]] = {}  # algorithm -> what the oracle found
        self._sample_hits: dict[str, list[int]] | None = None
        self.records: list[dict[str, Any]] = []

    def why_not(self, algorithm: str, threads: int) -> str | None:
        why = registry.unavailable(algorithm)
        if not why and algorithm == "paho" and self.wl.dialect != "mqtt":
            why = f"paho's MQTTMatcher speaks only MQTT; this workload is {self.wl.dialect}"
        if not why and threads > 1 and not registry.thread_safe(algorithm):
            why = "not thread-safe: measured at one thread only"
        return why

    def build(self, algorithm: str) -> Any:
        """A fresh matcher holding every subscription (its refusals kept, once)."""
        m = registry.make(algorithm, self.wl.dialect, topic_space=self.space,
                          max_words=self.wl.max_words)
        refused: list[str] = []
        registry.populate(m, self.pats, self.whos, refused)
        if algorithm not in self.refused:
            self.refused[algorithm] = refused
            if refused:
                self.progress.write(
                    f"  {algorithm} refused {len(refused):,} of "
                    f"{count(len(self.pats), 'subscription')} "
                    f"({count(len(set(refused)), 'pattern')}; "
                    f"UnsupportedPatternError), e.g. {refused[0]!r}")
        look = m.lookup
        for t in self.wl.topics:  # the untimed warm-up pass
            look(t)
        return m

    def params(self, algorithm: str) -> dict[str, Any]:
        params = {**self.wl.params(), "baseline": self.opts.baseline,
                  **self.checked.get(algorithm, {})}
        if algorithm == "inverted_bitmap":
            params["topic_space"] = "the distinct topics of the topics file"
        if algorithm == "optimized_bitmap":
            params["max_words"] = self.wl.max_words
        return params

    def oracle(self, algorithm: str, m: Any) -> None:
        """Compare the first answers with :func:`ctrie.matches`; keep (for every record of
        the algorithm) and say mismatches."""
        patterns = dict.fromkeys(self.pats)
        sample = self.wl.topics[:max(1, min(ORACLE_TOPICS, ORACLE_BUDGET // len(patterns)))]
        if self._sample_hits is None:  # pattern -> indices of the sample topics it matches
            d = Dialect.coerce(self.wl.dialect)
            self._sample_hits = {p: [i for i, t in enumerate(sample)
                                     if matches(p, t, d)] for p in patterns}
        refused = set(self.refused[algorithm])
        expected: list[set[Hashable]] = [set() for _ in sample]
        for p, who in self.wl.subscriptions:
            if p not in refused:
                for i in self._sample_hits[p]:
                    expected[i].add(who)
        bad = [i for i, t in enumerate(sample) if m.lookup(t) != expected[i]]
        found = self.checked[algorithm] = {"oracle_checked": len(sample),
                                           "oracle_mismatches": len(bad)}
        if bad:
            found["oracle_first_mismatch"] = sample[bad[0]]
            self.progress.write(f"  WARNING {algorithm}: {len(bad)} of "
                                f"{count(len(sample), 'lookup')} "
                                f"disagree with ctrie.matches (first: {sample[bad[0]]!r})")

    def record(self, algorithm: str, workload: str, params: dict[str, Any], unit: str,
               values: list[float], threads: int = 1, status: str = "ok",
               note: str | None = None) -> None:
        if values:
            s = spread(values)
            params = {**params, "q1": s["q1"], "q3": s["q3"]}
        if status == "ok":
            notes = [note] if note else []
            if self.refused.get(algorithm):
                notes.append(f"{count(len(self.refused[algorithm]), 'subscription')} refused "
                             "(UnsupportedPatternError)")
                params["refused_patterns"] = len(self.refused[algorithm])
            if params.get("oracle_mismatches"):
                notes.append(f"{params['oracle_mismatches']} of {params['oracle_checked']} "
                             "answers differ from ctrie.matches")
            note = "; ".join(notes) or None
        self.records.append(self.run.record(
            EXPERIMENT, algorithm, self.wl.dialect, workload, params, threads=threads,
            values=values, unit=unit, status=status, note=note, rounds=self.opts.rounds))

    def single(self, algorithm: str) -> None:
        """The single-thread cells: lookup latency and lookup throughput."""
        rounds, params = self.opts.rounds, self.params(algorithm)
        params["batch"] = LATENCY_BATCH
        why = self.why_not(algorithm, 1)
        if why:
            for wl_, unit in ((LATENCY, "ns"), (THROUGHPUT, "lookups/s")):
                self.record(algorithm, wl_, params, unit, [], status="skipped", note=why)
            self.progress.update(rounds)
            return
        topics = self.wl.topics
        batches = [topics[i:i + LATENCY_BATCH] for i in range(0, len(topics), LATENCY_BATCH)]
        ns: list[float] = []
        rates: list[float] = []
        hits: list[float] = []
        try:
            for rnd in range(rounds):
                m = self.build(algorithm)
                if rnd == 0:
                    self.oracle(algorithm, m)
                    params.update(self.checked[algorithm])
                look = m.lookup
                before = registry.computed_lookups(m)
                gc.collect()
                total = 0.0
                for batch in batches:
                    t0 = perf_counter()
                    for t in batch:
                        look(t)
                    dt = perf_counter() - t0
                    ns.append(dt * 1e9 / len(batch))
                    total += dt
                rates.append(len(topics) / total)
                add_hit_share(hits, [(m, before)], len(topics))
                del m, look
                self.progress.update(1)
        except Exception as exc:
            self._failed(algorithm, [(LATENCY, "ns", ns), (THROUGHPUT, "lookups/s", rates)],
                         params, 1, exc, rounds - len(rates))
            return
        if hits:
            params["cache_hit_rate"] = spread(hits)["median"]
        self.record(algorithm, LATENCY, params, "ns", ns)
        self.record(algorithm, THROUGHPUT, params, "lookups/s", rates)

    def threaded(self, algorithm: str, n: int, share: float) -> None:
        """One threaded cell: ``n`` threads, write share ``share``; ops/s per round."""
        opts = self.opts
        params = {**self.params(algorithm), "ops_per_thread": opts.ops,
                  "total_ops": n * opts.ops, "write_share_asked": share}
        workload = threaded_workload(share)
        why = self.why_not(algorithm, n)
        if why:
            self.record(algorithm, workload, params, "ops/s", [], threads=n,
                        status="skipped", note=why)
            self.progress.update(opts.rounds)
            return
        walls: list[float] = []
        cpus: list[float] = []
        hits: list[float] = []
        try:
            m = self.build(algorithm)  # the refusals, before the plans draw from the patterns
            refused = set(self.refused[algorithm])
            accepted = [p for p in dict.fromkeys(self.pats) if p not in refused]
            plans = [(_plan(self.wl, accepted, share, k, n, opts.ops, opts.seed), (WRITER, k))
                     for k in range(n)]
            writes = sum(w for ops, _ in plans for w, _ in ops)
            params.update(writes=writes, write_share=writes / (n * opts.ops))
            for rnd in range(opts.rounds):
                if rnd:
                    m = self.build(algorithm)
                before = registry.computed_lookups(m)
                wall, cpu = timed_round(m, plans, per_thread=[_Writer(m) for _ in plans],
                                        warm=True)
                add_hit_share(hits, [(m, before)], n * opts.ops - writes)
                walls.append(wall)
                cpus.append(cpu)
                self.progress.update(1)
        except Exception as exc:
            self._failed(algorithm, [(workload, "ops/s", [n * opts.ops / w for w in walls])],
                         params, n, exc, opts.rounds - len(walls))
            return
        store_cpu(params, walls, cpus, n * opts.ops)
        if hits:
            params["cache_hit_rate"] = spread(hits)["median"]
        self.record(algorithm, workload, params, "ops/s", [n * opts.ops / w for w in walls],
                    threads=n)

    def _failed(self, algorithm: str, cells: list[tuple[str, str, list[float]]],
                params: dict[str, Any], threads: int, exc: Exception, left: int) -> None:
        note = f"{type(exc).__name__}: {exc}"
        for workload, unit, values in cells:
            self.record(algorithm, workload, params, unit, values, threads=threads,
                        status="failed", note=note)
        self.progress.write(f"  {algorithm} x{threads}: FAILED {exc!r}")
        self.progress.update(left)


def measure(run: Run, wl: Workload, opts: Options) -> list[dict[str, Any]]:
    """Measure every cell of ``opts`` on ``wl``; return the records written (in order:
    each algorithm's single-thread cells, then the threaded cells by threads and share)."""
    threaded = [(a, n, s) for n in opts.threads for s in opts.write_shares
                for a in opts.algorithms]
    total = opts.rounds * (len(opts.algorithms) + len(threaded))
    with bar(total, f"compare {wl.name}") as progress:
        cells = _Cells(run, wl, opts, progress)
        for algorithm in opts.algorithms:
            progress.set_postfix_str(f"{algorithm} single-thread")
            cells.single(algorithm)
        for algorithm, n, share in threaded:
            progress.set_postfix_str(f"{algorithm} x{n} w{share:g}")
            cells.threaded(algorithm, n, share)
    return cells.records
