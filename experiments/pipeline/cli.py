"""``python -m experiments.pipeline <command>``: generate, route, aggregate.

=============  ==========================================================================
``generate``   seeded Zipf workload as Parquet (``subscriptions/``, ``messages/``); no
               Spark needed
``route``      route every message through one matcher per Spark partition; deliveries,
               rejections, fanout, summary; optional regex cross-join baseline
``aggregate``  the harness's ``*.jsonl`` result records of many runs as summary tables
               (Parquet and CSV); no Spark needed
=============  ==========================================================================

The harness mounts the same commands as ``python -m experiments pipeline ...``: its parser
calls :func:`add_parser` on its subparsers and, when ``args.command == "pipeline"``, returns
:func:`run` ``(args)``. Importing this module imports neither pyspark nor pyarrow.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..extras import from_error, missing
from ..preflight import dir_problem
from .sparkutil import is_local, local_path

__all__ = ["NEEDS", "add_parser", "build_parser", "main", "parse_levels", "parse_wildcards",
           "run"]

_DIALECTS = ("nats", "amqp", "mqtt")
_MATCHERS = ("cstrie", "locked_trie", "locked_trie_nocache", "naive", "inverted_bitmap",
             "optimized_bitmap")  # == matchers.MATCHERS (checked by the tests)
_IMPLS = ("arrow", "pandas", "rdd")  # == route.IMPLS
_DELIVERIES = ("rows", "ids")  # == route.DELIVERIES
#: The modules of the pipeline extra each command imports (checked before it starts).
NEEDS = {"generate": ("numpy", "pyarrow"), "route": ("pyspark", "pyarrow", "numpy"),
         "aggregate": ("pandas", "pyarrow", "numpy")}

_DESCRIPTION = ("Route pub/sub messages through the package's matchers at scale with Spark: "
                "generate a workload, route it, aggregate harness results.")


# --- argument types (each error names the rule; argparse names the option) ------------------


def _count(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def _wildcards(text: str) -> dict[str, float]:
    try:
        return parse_wildcards(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _levels(text: str) -> tuple[int, int]:
    try:
        return parse_levels(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value


def _names(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated names, got none")
    return names


def _out_dir(text: str) -> str:
    """An output folder: a local one must exist and take new files, or be creatable
    (checked now, not after Spark has started); a URI (``hdfs://``...) is Hadoop's to check."""
    why = dir_problem(local_path(text)) if is_local(text) else None
    if why:
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    return text


def _zipf(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def parse_wildcards(spec: str) -> dict[str, float]:
    """``"single=0.1,multi=0.05"`` -> ``{"single": 0.1, "multi": 0.05}``.

    Keys: ``single`` (per-level probability of the one-level wildcard) and ``multi``
    (per-pattern probability of the many-level wildcard); a key left out is 0. Raises
    ``ValueError`` naming the offending item.
    """
    out = {"single": 0.0, "multi": 0.0}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in out:
            raise ValueError(f"bad item {item!r}: expected single=P or multi=P")
        try:
            p = float(value)
        except ValueError:
            raise ValueError(f"bad probability in {item!r}: {value!r} is not a number") from None
        if not 0.0 <= p <= 1.0 or math.isnan(p):
            raise ValueError(f"bad probability in {item!r}: must be between 0 and 1")
        out[key] = p
    return out


def parse_levels(spec: str) -> tuple[int, int]:
    """``"3-5"`` -> ``(3, 5)``; ``"4"`` -> ``(4, 4)``. Raises ``ValueError``."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", spec)
    if not m:
        raise ValueError(f"expected MIN-MAX or N (e.g. 3-5), got {spec!r}")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    if lo < 1 or hi < lo:
        raise ValueError(f"expected 1 <= MIN <= MAX, got {spec!r}")
    return lo, hi


# --- parser ---------------------------------------------------------------------------------


def _add_commands(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="pipeline_command", metavar="COMMAND", required=True)

    g = sub.add_parser(
        "generate", help="write a seeded Zipf workload as Parquet (no Spark needed)",
        description="Write DIR/subscriptions (pattern, subscriber) and DIR/messages "
                    "(message_id, topic) as Parquet, and DIR/workload.json. Words are "
                    "Zipf-distributed per level; the same arguments give byte-identical "
                    "files.")
    g.add_argument("--out", type=_out_dir, required=True, metavar="DIR", help="output folder")
    g.add_argument("--subscriptions", type=_count, required=True, metavar="N",
                   help="subscription rows")
    g.add_argument("--messages", type=_count, required=True, metavar="M", help="message rows")
    g.add_argument("--dialect", choices=_DIALECTS, default="nats",
                   help="topic dialect (default: nats)")
    g.add_argument("--seed", type=_count, default=1, metavar="S", help="seed (default: 1)")
    g.add_argument("--wildcards", type=_wildcards, default="single=0.1,multi=0.05",
                   metavar="SPEC",
                   help="wildcard mix of the patterns: single=P is the probability that a "
                        "level is the one-level wildcard, multi=Q that a pattern has a "
                        "many-level wildcard (last level in nats/mqtt, any level in amqp); "
                        "a key left out is 0 (default: single=0.1,multi=0.05)")
    g.add_argument("--invalid-rate", type=_rate, default=0.0, metavar="R",
                   help="fraction of messages given an invalid topic of the dialect, null "
                        "included (default: 0)")
    g.add_argument("--vocabulary", type=_positive, default=1000, metavar="V",
                   help="distinct words per level (default: 1000)")
    g.add_argument("--zipf", type=_zipf, default=1.1, metavar="S",
                   help="Zipf exponent of word popularity (default: 1.1)")
    g.add_argument("--levels", type=_levels, default=(3, 5), metavar="MIN-MAX",
                   help="levels per topic and pattern, uniform (default: 3-5)")
    g.add_argument("--subscribers", type=_positive, default=None, metavar="K",
                   help="distinct subscribers, drawn uniformly (default: one per "
                        "subscription row)")
    g.add_argument("--hot-share", type=_rate, default=0.0, metavar="F",
                   help="fraction of messages given one hot topic (the most popular word of "
                        "each level), to skew the work (default: 0)")
    g.add_argument("--overwrite", action="store_true",
                   help="replace DIR/subscriptions, DIR/messages and DIR/workload.json")
    g.set_defaults(pipeline_handler=_generate)

    r = sub.add_parser(
        "route", help="route every message with one matcher per Spark partition",
        description="Broadcast the subscriptions, build one matcher per partition, route "
                    "every message. Writes DIR/deliveries, DIR/rejected, "
                    "DIR/rejected_subscriptions, DIR/fanout/{histogram,top_topics} (Parquet) "
                    "and DIR/summary.json.")
    r.add_argument("--subscriptions", required=True, metavar="PATH",
                   help="Parquet file or folder with columns pattern, subscriber (strings)")
    r.add_argument("--messages", required=True, metavar="PATH",
                   help="Parquet file or folder with columns message_id (integer), topic "
                        "(string)")
    r.add_argument("--out", type=_out_dir, required=True, metavar="DIR",
                   help="output folder (local path or a URI Hadoop knows)")
    r.add_argument("--matcher", choices=_MATCHERS, default="cstrie",
                   help="matcher built in each partition (default: cstrie)")
    r.add_argument("--dialect", choices=_DIALECTS, default=None,
                   help="topic dialect (default: the one generate recorded in a "
                        "workload.json beside --messages or --subscriptions, else nats)")
    r.add_argument("--dialect-mismatch-ok", action="store_true",
                   help="route with --dialect although a workload.json beside the inputs "
                        "records another dialect (refused without it)")
    r.add_argument("--master", default=None,
                   help="Spark master, e.g. spark://host:7077, yarn (default: the one "
                        "spark-submit was given when it runs this command, else local[*])")
    r.add_argument("--conf", type=_conf, action="append", default=[], metavar="KEY=VALUE",
                   help="Spark configuration, repeatable (e.g. --conf "
                        "spark.executor.memory=4g)")
    r.add_argument("--executor-python", default=None, metavar="PATH",
                   help="the Python the executors run, e.g. ./env/bin/python of an archive "
                        "shipped with --conf spark.archives=env.tar.gz#env; exported as "
                        "PYSPARK_PYTHON (what PySpark reads) and set as spark.pyspark.python "
                        "and spark.executorEnv.PYSPARK_PYTHON before Spark starts (default: "
                        "a --conf spark.pyspark.python, else in local mode this interpreter, "
                        "on a cluster $PYSPARK_PYTHON or the nodes' python3)")
    r.add_argument("--impl", choices=_IMPLS, default=None,
                   help="how partitions are routed: mapInArrow, mapInPandas or RDD "
                        "mapPartitions (default: arrow, the fastest measured)")
    r.add_argument("--deliveries", choices=_DELIVERIES, default="rows",
                   help="rows: deliveries/ holds one row (message_id, subscriber) per delivery "
                        "(the default); ids: one row per message with deliveries, "
                        "(message_id, subscriber_ids array<int>), and subscribers/ maps "
                        "subscriber_id to the name: far less to write (needs --impl arrow)")
    r.add_argument("--partitions", type=_positive, default=None, metavar="N",
                   help="partitions to route in (default: the input's, at least "
                        "spark.default.parallelism)")
    r.add_argument("--salt", action="store_true",
                   help="spread each hot topic (one estimated to carry 1/(2 x partitions) of "
                        "the messages or more) evenly over all partitions instead of routing "
                        "it in one task (default: every topic in one partition)")
    r.add_argument("--baseline", choices=("regex",), default=None,
                   help="also route with a regex per pattern, a cross join and RLIKE; "
                        "compare and time both")
    r.add_argument("--baseline-limit", type=_positive, default=None, metavar="N",
                   help="run the baseline (and its timed matcher twin) on the first N "
                        "messages only (the cross join costs messages x patterns)")
    r.add_argument("--top", type=_positive, default=20, metavar="K",
                   help="top topics by deliveries to keep (default: 20)")
    r.add_argument("--inprocess", type=_count, default=0, metavar="N",
                   help="also time single-thread lookups of the first N messages on the "
                        "driver, for the per-core comparison (default: 0, off)")
    r.add_argument("--max-words", type=_positive, default=None, metavar="N",
                   help="optimized_bitmap's max_words (default: the longest topic's words)")
    r.add_argument("--overwrite", action="store_true",
                   help="replace the outputs of an earlier run in DIR (only once the new run "
                        "is complete: it is written beside DIR and swapped in)")
    r.set_defaults(pipeline_handler=_route)

    a = sub.add_parser(
        "aggregate", help="summarise harness result records of many runs (no Spark needed)",
        description="Read every *.jsonl record below the --from folders; write "
                    "summary.{parquet,csv} (median of medians, IQR, min/max, ratio to "
                    "--reference, per Python build) and records.{parquet,csv} into --out.")
    a.add_argument("--from", dest="sources", nargs="+", required=True, metavar="DIR",
                   help="results folders (searched recursively for *.jsonl)")
    a.add_argument("--out", type=_out_dir, required=True, metavar="DIR", help="output folder")
    a.add_argument("--reference", default="CSTrie", metavar="ALGO",
                   help="algorithm the ratios are taken to; case and punctuation ignored "
                        "(default: CSTrie)")
    a.add_argument("--params", type=_names, default=None, metavar="KEYS",
                   help="comma-separated params keys that identify a cell (default: the "
                        "harness's configuration keys, see experiments.pipeline.aggregate)")
    a.add_argument("--overwrite", action="store_true",
                   help="replace the files of an earlier aggregate in --out")
    a.set_defaults(pipeline_handler=_aggregate)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``pipeline`` (with sub-commands) on a harness's ``add_subparsers()`` object.

    Dispatch with :func:`run` when the parsed command is ``pipeline``.
    """
    p = subparsers.add_parser("pipeline", help="Spark pipeline: generate, route, aggregate",
                              description=_DESCRIPTION)
    _add_commands(p)
    return p


def build_parser(prog: str = "python -m experiments.pipeline") -> argparse.ArgumentParser:
    """The stand-alone parser."""
    parser = argparse.ArgumentParser(
        prog=prog, description=_DESCRIPTION,
        epilog="Example: %(prog)s generate --out /tmp/wl --subscriptions 10000 --messages "
               "1000000 && %(prog)s route --subscriptions /tmp/wl/subscriptions --messages "
               "/tmp/wl/messages --out /tmp/routed")
    _add_commands(parser)
    return parser


# --- commands -------------------------------------------------------------------------------


def _err(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr, flush=True)


def _generate(args: argparse.Namespace) -> int:
    from .generate import Workload, generate

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        _err(f"--out {out}: exists and is not a directory")
        return 2
    ours = [out / n for n in ("subscriptions", "messages", "workload.json")]
    present = [p for p in ours if p.exists()]
    if present and not args.overwrite:
        _err(f"--out {out}: already holds {', '.join(p.name for p in present)}; pass "
             "--overwrite to replace them")
        return 2
    for p in present:
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    try:
        wl = Workload(subscriptions=args.subscriptions, messages=args.messages,
                      dialect=args.dialect, seed=args.seed, wildcards=args.wildcards,
                      invalid_rate=args.invalid_rate, vocabulary=args.vocabulary,
                      zipf=args.zipf, levels=args.levels, subscribers=args.subscribers,
                      hot_share=args.hot_share)
    except ValueError as exc:
        _err(str(exc))
        return 2
    import time

    t0 = time.perf_counter()
    manifest = generate(wl, out)
    print(f"wrote {manifest['subscriptions']['rows']} subscriptions to {out / 'subscriptions'}"
          f" and {manifest['messages']['rows']} messages to {out / 'messages'} in "
          f"{time.perf_counter() - t0:.1f} s (seed {wl.seed}, {wl.dialect}, wildcards "
          f"{','.join(f'{k}={v}' for k, v in wl.wildcards.items())})")
    return 0


def _route(args: argparse.Namespace) -> int:
    from .route import DEFAULT_IMPL, RouteOptions, run_route

    if args.baseline_limit and not args.baseline:
        _err("--baseline-limit needs --baseline regex")
        return 2
    opts = RouteOptions(
        subscriptions=args.subscriptions, messages=args.messages, out=args.out,
        matcher=args.matcher, dialect=args.dialect,
        dialect_mismatch_ok=args.dialect_mismatch_ok, master=args.master, conf=args.conf,
        impl=args.impl or DEFAULT_IMPL, partitions=args.partitions, baseline=args.baseline,
        baseline_limit=args.baseline_limit, top=args.top, inprocess=args.inprocess,
        max_words=args.max_words, overwrite=args.overwrite, salt=args.salt,
        executor_python=args.executor_python, deliveries=args.deliveries, argv=list(sys.argv))
    summary = run_route(opts)
    keys = ("messages_in", "messages_routed", "messages_rejected", "deliveries", "seconds",
            "messages_per_second", "matcher", "dialect", "impl", "partitions")
    print(json.dumps({k: summary[k] for k in keys}))
    rc = 0
    if "inprocess" in summary:
        print(f"in-process: {json.dumps(summary['inprocess'])}")
    if "baseline" in summary:
        b = summary["baseline"]
        print(f"baseline regex: {b['messages']} messages, regex {b['regex_seconds']} s, "
              f"matcher {b['matcher_seconds']} s, speedup {b['speedup']}x, "
              f"equal={b['equal']}")
        if not b["equal"]:
            _err(f"the regex baseline and {opts.matcher} disagree: {b['only_regex']} "
                 f"deliveries only in the regex output, {b['only_matcher']} only in the "
                 f"matcher's (see {opts.out}/baseline)")
            rc = 1
    if summary["matcher_errors"]:
        rc = 1
    print(f"summary: {opts.out.rstrip('/')}/summary.json")
    return rc


def _aggregate(args: argparse.Namespace) -> int:
    from .aggregate import CONFIG_PARAMS, run_aggregate

    result = run_aggregate([Path(s) for s in args.sources], Path(args.out), args.reference,
                           args.overwrite, args.params or CONFIG_PARAMS)
    print(f"read {result['records']} records into {result['cells']} cells "
          f"(skipped: {result['skipped']})")
    if not result["reference_found"]:
        print(f"warning: no records of the reference algorithm {args.reference!r}: ratios "
              "are empty", file=sys.stderr)
    for path in result["written"]:
        print(f"wrote {path}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the parsed pipeline command; return the exit status (errors are printed)."""
    handler: Callable[[argparse.Namespace], int] = args.pipeline_handler
    from .sparkutil import PipelineError, checksum_error

    what = f"pipeline {args.pipeline_command}"
    problem = missing(what, NEEDS[args.pipeline_command])
    if problem:
        _err(problem)
        return 2
    try:
        return handler(args)
    except PipelineError as exc:
        _err(str(exc))
        return 2
    except ImportError as exc:
        _err(from_error(what, exc))
        return 2
    except RuntimeError as exc:
        _err(str(exc))
        return 1
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as exc:
        stale = checksum_error(exc)  # a file changed after the checks (they find the rest)
        if stale is None:
            raise
        _err(str(stale))
        return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m experiments.pipeline``; returns the exit status."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run(args)
