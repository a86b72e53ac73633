"""``python -m experiments <command> [options]``: the harness's command line.

Measuring commands (``latency``, ``throughput``, ``memory``, ``scaling``, ``lockfree``,
``contention``, ``sharing``, ``ownership``, ``starvation``, ``level_width``, ``primitives``,
``all``) share the options ``--quick`` / ``--smoke`` / ``--size``, ``--out``, ``--seed``,
``--algorithms``, ``--dialects``, ``--python``, and for the concurrent experiments
``--threads``, ``--round-ops`` and ``--write-shares``; ``charts`` and ``summary`` read
result files only (``--from``). ``compare`` measures the matchers on a workload given as
two files (see :mod:`experiments.measure.compare`).

``--python PATH`` re-runs the same command under another interpreter (``PATH -m
experiments <the same arguments without --python>``), streaming its output, so that one
command line measures a GIL and a free-threaded build into one results root.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .config import SIZES, Size
from .env import PROJECT_ROOT, Run, default_figures_dir, default_results_root
from .report.summary import README_BEGIN, README_END, update_readme
from .registry import ALGORITHMS

__all__ = ["main"]

MEASURES = ("latency", "throughput", "memory", "scaling", "lockfree", "contention",
            "sharing", "ownership", "starvation", "level_width", "primitives")
DIALECTS = ("nats", "mqtt", "amqp")
DEFAULT_DIALECTS = ("nats", "mqtt")

_HELP = {
    "latency": "cold and hot latency of subscribe, unsubscribe and lookup, and lookup on a "
               "dense wildcard workload (pyperf)",
    "throughput": "messages per second on the 3-digit workload",
    "memory": "bytes held per subscription (tracemalloc) and its growth",
    "scaling": "concurrent rounds at growing thread counts: 50/50, 90/10 faithful and true",
    "lockfree": "lock-free vs locked: insert:lookup 1:1 and 1:3 at growing worker counts",
    "contention": "CPU time per operation, one shared matcher vs one per thread (1, 2 threads)",
    "sharing": "why a shared matcher loses parallelism: shared vs one per thread built by its "
               "reader, write shares, gc, ablations, re-walk and CAS-failure counters",
    "ownership": "one thread's lookups on a matcher it built vs one another thread built",
    "starvation": "one reader's lookups per second beside one writer (CS-trie, LockedTrie)",
    "level_width": "one subscribe+unsubscribe, and one lookup, under 1 to 100,000 sibling "
                   "inboxes (CS-trie, LockedTrie)",
    "primitives": "cost of AtomicRef, threading.Lock, RWLock and atomics operations",
    "all": "every measuring experiment above, in one run",
}


# --- argument types (each error names the rule) ----------------------------------------------


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def _choices_list(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(
                f"must be a comma-separated list of {', '.join(allowed)}; got an empty list")
        bad = [t for t in items if t not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(map(repr, bad))}; choose from {', '.join(allowed)}")
        return list(dict.fromkeys(items))
    return parse


def _int_list(text: str) -> list[int]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        values = [int(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of positive integers, got {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of positive integers, got {text!r}")
    return sorted(set(values))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _share_list(text: str) -> list[float]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        values = [float(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of write shares between 0 and 1, got {text!r}")
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of write shares between 0 and 1, got {text!r}")
    return sorted(set(values))


def _python(text: str) -> str:
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist (give a Python executable)")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not an executable file")
    return str(path)


def _existing_dir(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory of results")
    return path


def _out_dir(text: str) -> Path:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory")
    return path


# --- parser ---------------------------------------------------------------------------------


def _measure_options(p: argparse.ArgumentParser, latency_like: bool) -> None:
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="CI-sized run of the same code (minutes, not hours)")
    size.add_argument("--smoke", dest="size", action="store_const", const="smoke",
                      help="smallest run, for the smoke test: proves the code runs, "
                           "numbers are meaningless")
    size.add_argument("--size", dest="size", choices=tuple(SIZES),
                      help="run size by name (default: full, the publication size)")
    p.set_defaults(size="full")
    p.add_argument("--out", type=_out_dir, default=None, metavar="DIR",
                   help="results root; records go to DIR/<version>-<gil|ft>/ "
                        f"(default: {default_results_root()})")
    p.add_argument("--python", type=_python, default=None, metavar="PATH",
                   help="run the measurement under the interpreter PATH instead "
                        "(e.g. .venv-ft/bin/python); output is streamed")
    p.add_argument("--seed", type=_seed, default=1, metavar="N",
                   help="seed of every random workload (default: 1)")
    p.add_argument("--algorithms", type=_choices_list(ALGORITHMS), default=list(ALGORITHMS),
                   metavar="LIST", help=f"comma-separated subset of {', '.join(ALGORITHMS)} "
                                        "(default: all)")
    p.add_argument("--dialects", type=_choices_list(DIALECTS), default=list(DEFAULT_DIALECTS),
                   metavar="LIST",
                   help="dialect forms of the single-thread workloads, from "
                        f"{', '.join(DIALECTS)} (default: nats,mqtt; paho runs only on mqtt)")
    p.add_argument("--threads", type=_int_list, default=None, metavar="LIST",
                   help="thread counts of the scaling and sharing experiments, e.g. 1,2,4,8,16 "
                        "(default: the size's; above the CPU count they oversubscribe)")
    p.add_argument("--round-ops", type=_positive_int, default=None, metavar="N",
                   help="operations per thread per round in scaling, contention and sharing "
                        "(default: the size's)")
    p.add_argument("--write-shares", type=_share_list, default=None, metavar="LIST",
                   help="write shares of the sharing experiment, e.g. 0,0.01,0.1,0.5 "
                        "(default: the size's)")
    if latency_like:
        p.add_argument("--method", choices=("auto", "pyperf", "timeit"), default="auto",
                       help="per-operation timing: pyperf in subprocesses, or the stdlib "
                            "fallback in this process (default: auto = pyperf if importable)")


def _source_option(p: argparse.ArgumentParser) -> None:
    """``--from DIR``: the results root a reading command (charts, summary, paper) reads."""
    p.add_argument("--from", dest="source", type=_existing_dir,
                   default=default_results_root(), metavar="DIR",
                   help=f"results root to read (default: {default_results_root()})")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m experiments`` parser."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments",
        description="Reproduce the Fast Topic Matching / Breaking and Entering experiments "
                    "for every matcher of the package and paho-mqtt's MQTTMatcher.",
        epilog="Example: python -m experiments all --quick && python -m experiments charts "
               "--from results && python -m experiments summary --from results",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in (*MEASURES, "all"):
        p = sub.add_parser(name, help=_HELP[name], description=_HELP[name])
        _measure_options(p, latency_like=name in ("latency", "primitives", "all"))
    p = sub.add_parser("charts", help="draw the figures from result files only",
                       description="Draw every figure (PNG and SVG) from the records below "
                                   "--from; GIL and free-threaded builds side by side.")
    _source_option(p)
    p.add_argument("--out", type=_out_dir, default=default_figures_dir(), metavar="DIR",
                   help=f"where figures go (default: {default_figures_dir()})")
    p.add_argument("--formats", type=_choices_list(("png", "svg", "pdf")),
                   default=["png", "svg"], metavar="LIST",
                   help="comma-separated file formats (default: png,svg)")
    p = sub.add_parser("summary", help="print the target-ratio table from result files",
                       description="Print the target ratios (met/missed and by how much), "
                                   "each from cells of one run, and write the table as "
                                   "JSON and Markdown into --from.")
    _source_option(p)
    p_paper = sub.add_parser("paper", help="fill paper/paper.template.md from result files",
                             description="Write paper/paper.md: the template with every "
                                         "table filled from the result files under --from.")
    _source_option(p_paper)
    p_paper.add_argument("--template", type=Path,
                         default=PROJECT_ROOT / "paper" / "paper.template.md", metavar="FILE",
                         help="the template (default: paper/paper.template.md)")
    p_paper.add_argument("--out", type=Path, default=PROJECT_ROOT / "paper" / "paper.md",
                         metavar="FILE", help="the paper to write (default: paper/paper.md)")
    p.add_argument("--readme", type=Path, default=None, metavar="FILE",
                   help="also put the table into FILE between the markers "
                        f"{README_BEGIN!r} and {README_END!r} (make reproduce: README.md)")
    from .pipeline.cli import add_parser as add_pipeline  # imports neither pyspark nor pyarrow

    add_pipeline(sub)
    from .measure.compare import add_parser as add_compare

    add_compare(sub, {"seed": _seed, "algorithms": _choices_list(ALGORITHMS), "ints": _int_list,
                      "shares": _share_list, "positive": _positive_int, "python": _python,
                      "out": _out_dir})
    return parser


# --- commands -------------------------------------------------------------------------------


def _strip_python(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            out.append(arg)
    return out


def _reexec(python: str, argv: list[str]) -> int:
    """Run ``python -m experiments argv`` with inherited stdio; return its exit code."""
    cmd = [python, "-m", "experiments", *_strip_python(argv)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    print(f"== running under {python}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    try:
        rc = subprocess.call(cmd, env=env)
    except OSError as exc:
        print(f"error: --python {python}: cannot run it: {exc}", file=sys.stderr)
        return 2
    if rc:
        print(f"error: --python {python}: the run exited with code {rc}", file=sys.stderr)
    return rc


def sized(size: Size, args: argparse.Namespace) -> Size:
    """``size`` with the thread counts, round length and write shares given on the command
    line (recorded with the run, as the size is)."""
    changes: dict = {}
    if getattr(args, "threads", None):
        changes["scaling_threads"] = changes["sharing_threads"] = tuple(args.threads)
    if getattr(args, "round_ops", None):
        changes["scaling_ops"] = changes["contention_ops"] = args.round_ops
        changes["sharing_ops"] = args.round_ops
    if getattr(args, "write_shares", None):
        changes["sharing_write_shares"] = tuple(args.write_shares)
    return replace(size, **changes) if changes else size


def _measure(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        import baselines  # noqa: F401
        import ctrie  # noqa: F401
    except ImportError as exc:
        print(f"error: {sys.executable} cannot import the package ({exc}); install it there "
              "(pip install -e .) or pick another --python", file=sys.stderr)
        return 2
    from .measure import (contention, level_width, lockfree, memory, microbench, ownership,
                          scaling, sharing, starvation, throughput)
    from .registry import dialects_for

    root = args.out if args.out is not None else default_results_root()
    run = Run(root, args.seed, sized(SIZES[args.size], args), argv)
    algorithms, dialects = args.algorithms, args.dialects
    method = getattr(args, "method", "auto")

    def latency() -> None:
        groups = [(f"{a}:{d}", a, d) for a in algorithms for d in dialects_for(a, dialects)]
        microbench.run_groups(run, "latency", "latency", groups, method)

    def primitives() -> None:
        microbench.run_groups(run, "primitives", "primitives",
                              [("primitives", "primitives", None)], method)

    steps = {
        "latency": latency,
        "throughput": lambda: throughput.run_throughput(run, algorithms, dialects),
        "memory": lambda: memory.run_memory(run, algorithms, dialects),
        "scaling": lambda: scaling.run_scaling(run, algorithms, dialects),
        "lockfree": lambda: lockfree.run_lockfree(run, algorithms, dialects),
        "contention": lambda: contention.run_contention(run, algorithms, dialects),
        "sharing": lambda: sharing.run_sharing(run, algorithms, dialects),
        "ownership": lambda: ownership.run_ownership(run, algorithms, dialects),
        "starvation": lambda: starvation.run_starvation(run, algorithms, dialects),
        "level_width": lambda: level_width.run_level_width(run, algorithms, dialects),
        "primitives": primitives,
    }
    todo = MEASURES if args.command == "all" else (args.command,)
    if "paho" in algorithms and "mqtt" not in dialects:
        print("note: paho's MQTTMatcher is measured on the MQTT form only, and --dialects "
              "excludes mqtt: it is left out of the single-thread experiments",
              file=sys.stderr)
    print(f"== {args.command} (size {args.size}, seed {args.seed}) on {run.build} "
          f"[{sys.executable}] -> {run.dir}", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        for name in todo:
            t0 = time.monotonic()
            steps[name]()
            print(f"== {name} done in {time.monotonic() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    finally:
        run.close()
        run.report()
    print(f"total {time.monotonic() - started:.0f} s. Next: python -m experiments charts "
          f"--from {root}; python -m experiments summary --from {root}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "python", None):
            return _reexec(args.python, argv)
        if args.command == "charts":
            from .report.charts import run_charts

            for path in run_charts(args.source, args.out, tuple(args.formats)):
                print(f"wrote {path}")
            return 0
        if args.command == "compare":
            from .compare import run_compare

            return run_compare(args, argv)
        if args.command == "pipeline":
            from .pipeline.cli import run as run_pipeline

            return run_pipeline(args)
        if args.command == "paper":
            from .report.paper import run_paper

            print(f"wrote {run_paper(args.source, args.template, args.out)}")
            return 0
        if args.command == "summary":
            from .report.summary import run_summary

            rows = run_summary(args.source)
            if args.readme is not None:
                update_readme(args.readme, rows, args.source)
                print(f"updated the results table in {args.readme}")
            return 0 if rows else 1
        return _measure(args, argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
