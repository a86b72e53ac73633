"""``cstrie-experiments <command> [options]`` (or ``python -m experiments``): the harness's
command line.

Measuring commands (``latency``, ``throughput``, ``memory``, ``scaling``, ``lockfree``,
``contention``, ``sharing``, ``ownership``, ``starvation``, ``level_width``, ``primitives``,
``all``) are quick by default and print an estimate of their time before they start (from
earlier runs of the same selection: :mod:`experiments.estimate`); they share the options
``--quick`` / ``--smoke`` / ``--full`` / ``--size``, ``--out``, ``--seed`` and ``--python``,
and each takes those of ``--algorithms``, ``--dialects``, ``--method``, ``--threads``,
``--round-ops`` and ``--write-shares`` that change its work (:data:`USED_BY`; ``all`` takes
every one); ``charts``, ``summary`` and ``paper``
read result files only (``--from``) and write beside them; ``publish`` is the one command
that changes tracked files (README table, ``paper/``), from publication-size runs only.
``compare`` measures the matchers on a workload given as two files (see
:mod:`experiments.measure.compare`).

``--python PATH`` re-runs the same command under another interpreter (``PATH -P -m
experiments <the same arguments without --python>``), streaming its output, so that one
command line measures a GIL and a free-threaded build into one results root.

A measuring run stopped by Ctrl-C (exit 130) or SIGTERM (exit 143) keeps the records it
wrote and says so in its run file (``status: "interrupted"``, when, in which experiment).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any
from dataclasses import replace

from .argtypes import (FOUND_PYTHONS, choices_list, existing_dir, existing_file, int_list,
                       out_dir, out_file, positive_int, python_arg, seed_arg, share_list)
from .config import SIZES, Size
from .env import PROJECT_ROOT, Run, default_results_root, paper_build_dir
from .estimate import estimate_line
from .extras import missing
from .preflight import dir_problem, file_problem
from .registry import ALGORITHMS, DIALECTS
from .rerun import PROG_ENV, end_failed, end_interrupted, reexec, report_run, terminate
from .writing import WriteError

__all__ = ["main"]

MEASURES = ("latency", "throughput", "memory", "scaling", "lockfree", "contention",
            "sharing", "ownership", "starvation", "level_width", "primitives")
#: What the ``--python`` check found, by path ("Python 3.13.5, free-threaded build, ...").

DEFAULT_DIALECTS = ("nats", "mqtt")

_HELP = {
    "latency": "cold and hot latency of subscribe, unsubscribe and lookup, and lookup on a "
               "dense wildcard workload (pyperf)",
    "throughput": "messages per second on the 3-digit workload",
    "memory": "bytes held per subscription (tracemalloc) and its growth",
    "scaling": ("concurrent rounds at growing thread counts: 50/50, 90/10 faithful and true; "
                "shared, and one matcher per thread built by that thread (the limit)"),
    "lockfree": "lock-free vs locked: insert:lookup 1:1 and 1:3 at growing worker counts",
    "contention": "CPU time per operation, one shared matcher vs one per thread (1, 2 threads)",
    "sharing": "why a shared matcher loses parallelism: shared vs one per thread built by its "
               "reader, write shares, gc, ablations, re-walk and CAS-failure counters",
    "ownership": "one thread's lookups on a matcher it built vs one another thread built",
    "starvation": "one reader's lookups per second beside one writer (CS-trie, LockedTrie)",
    "level_width": "one subscribe+unsubscribe, and one lookup, under 1 to 110,000 sibling "
                   "inboxes; one subscribe+unsubscribe on a pattern of as many subscribers "
                   "(CS-trie, LockedTrie)",
    "primitives": "cost of AtomicRef, threading.Lock, RWLock and atomics operations",
    "all": "every measuring experiment above, in one run",
}


# --- parser ---------------------------------------------------------------------------------


def _measure_options(p: argparse.ArgumentParser, command: str) -> None:
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="CI-sized run of the same code (minutes, not hours)")
    size.add_argument("--smoke", dest="size", action="store_const", const="smoke",
                      help="smallest run, for the smoke test: proves the code runs, "
                           "numbers are meaningless")
    size.add_argument("--full", dest="size", action="store_const", const="full",
                      help="publication size: the runs the paper reports (the longest; "
                           "the estimate printed at the start says how long)")
    size.add_argument("--size", dest="size", choices=tuple(SIZES),
                      help="run size by name (default: quick; full is the publication size)")
    p.set_defaults(size="quick")
    # A str default goes through the type too: the default root is checked like a given one.
    p.add_argument("--out", type=out_dir, default=str(default_results_root()), metavar="DIR",
                   help="results root; records go to DIR/<version>-<gil|ft>/ "
                        f"(default: {default_results_root()})")
    p.add_argument("--python", type=python_arg, default=None, metavar="PATH",
                   help="run the measurement under the interpreter PATH instead "
                        "(e.g. .venv-ft/bin/python); output is streamed")
    p.add_argument("--seed", type=seed_arg, default=1, metavar="N",
                   help="seed of every random workload (default: 1)")
    for option, users, kwargs in _SELECTION:
        if command == "all" or command in users:
            if command == "all" and users != USED_BY["--algorithms"]:
                kwargs = {**kwargs, "help": f"(for {', '.join(users)}) {kwargs['help']}"}
            p.add_argument(option, **kwargs)
        else:  # what the command runs with, given nowhere
            p.set_defaults(**{option[2:].replace("-", "_"): kwargs["default"]})


#: The measuring options that select work, beside --out, --python, --seed and the size: each
#: with the commands that use it (the others neither show nor take it; ``all`` has all).
_SELECTION: tuple[tuple[str, tuple[str, ...], dict[str, Any]], ...] = (
    ("--algorithms", tuple(m for m in MEASURES if m != "primitives"), dict(
        type=choices_list(ALGORITHMS), default=list(ALGORITHMS), metavar="LIST",
        help=f"comma-separated subset of {', '.join(ALGORITHMS)} (default: all)")),
    ("--dialects", ("latency", "throughput", "memory"), dict(
        type=choices_list(DIALECTS), default=list(DEFAULT_DIALECTS), metavar="LIST",
        help=f"dialect forms of the single-thread workloads, from {', '.join(DIALECTS)} "
             "(default: nats,mqtt; paho runs only on mqtt)")),
    ("--threads", ("scaling", "sharing"), dict(
        type=int_list, default=None, metavar="LIST",
        help="thread counts of the scaling and sharing experiments, e.g. 1,2,4,8,16 "
             "(default: the size's; above the CPU count they oversubscribe)")),
    ("--round-ops", ("scaling", "contention", "sharing"), dict(
        type=positive_int, default=None, metavar="N",
        help="operations per thread per round in scaling, contention and sharing "
             "(default: the size's)")),
    ("--write-shares", ("sharing",), dict(
        type=share_list, default=None, metavar="LIST",
        help="write shares of the sharing experiment, e.g. 0,0.01,0.1,0.5 (default: the "
             "size's)")),
    ("--method", ("latency", "primitives"), dict(
        choices=("auto", "pyperf", "timeit"), default="auto",
        help="per-operation timing: pyperf in subprocesses, or the stdlib fallback in this "
             "process (default: auto = pyperf if importable)")),
)
#: The commands that use each option of :data:`_SELECTION`.
USED_BY = {option: users for option, users, _ in _SELECTION}


def _source_option(p: argparse.ArgumentParser) -> None:
    """``--from DIR``: the results root a reading command (charts, summary, paper) reads."""
    p.add_argument("--from", dest="source", type=existing_dir,
                   default=default_results_root(), metavar="DIR",
                   help=f"results root to read (default: {default_results_root()})")


def _prog() -> str:
    """How the user called us: ``cstrie-experiments`` (the console script) or ``python -m
    experiments``."""
    if os.environ.get(PROG_ENV):  # a --python re-run: the name the user typed
        return os.environ[PROG_ENV]
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m experiments" if name in ("", "__main__.py", "-c") else name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser (``cstrie-experiments`` or ``python -m experiments``)."""
    parser = argparse.ArgumentParser(
        prog=prog or _prog(),
        description="Reproduce the Fast Topic Matching / Breaking and Entering experiments "
                    "for every matcher of the package and paho-mqtt's MQTTMatcher.",
        epilog="Example: cstrie-experiments all (quick) && cstrie-experiments charts --from "
               "results && cstrie-experiments paper --from results (into results/paper/)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in (*MEASURES, "all"):
        p = sub.add_parser(name, help=_HELP[name], description=_HELP[name])
        _measure_options(p, name)
    p = sub.add_parser("charts", help="draw the figures from result files only",
                       description="Draw every figure (PNG and SVG) from the records below "
                                   "--from; GIL and free-threaded builds side by side.")
    _source_option(p)
    p.add_argument("--out", type=out_dir, default=None, metavar="DIR",
                   help="where figures go (default: FROM/paper/figures; the committed "
                        "paper/figures change only through publish)")
    p.add_argument("--formats", type=choices_list(("png", "svg", "pdf")),
                   default=["png", "svg"], metavar="LIST",
                   help="comma-separated file formats (default: png,svg)")
    p = sub.add_parser("summary", help="print the target-ratio table from result files",
                       description="Print the target ratios (met/missed and by how much), "
                                   "each from cells of one run, and write the table as "
                                   "JSON and Markdown into --from.")
    _source_option(p)
    p_paper = sub.add_parser("paper", help="fill paper/paper.template.md from result files",
                             description="Write paper/paper.md: the template with every "
                                         "table filled from the result files under --from. "
                                         "The paper is built from a checkout of the "
                                         "repository: an installed package has no template.")
    _source_option(p_paper)
    p_paper.add_argument("--template", type=existing_file, default=None, metavar="FILE",
                         help="the template (default: paper/paper.template.md of the checkout)")
    p_paper.add_argument("--out", type=out_file, default=None, metavar="FILE",
                         help="the paper to write (default: FROM/paper/paper.md, beside the "
                              "figures of charts; the committed paper/paper.md changes only "
                              "through publish)")
    p = sub.add_parser("publish", help="update the committed README table, paper/figures and "
                                       "paper/paper.md from publication-size runs",
                       description="The one step that changes tracked files: redraw "
                                   "paper/figures/*.png, paper/paper.md and README.md's results "
                                   "table from the records under --from, after checking that "
                                   "every run they draw from is of publication size (full).")
    _source_option(p)
    p.add_argument("--allow-size", dest="allow_sizes", type=choices_list(tuple(SIZES)),
                   default=["full"], metavar="LIST",
                   help="run sizes to accept (default: full)")
    p.add_argument("--allow-missing", action="store_true",
                   help="publish even when some targets have no data in --from (they would "
                        "replace the committed rows with 'no data')")
    from .pipeline.cli import add_parser as add_pipeline  # imports neither pyspark nor pyarrow

    add_pipeline(sub)
    from .measure.compare import add_parser as add_compare

    add_compare(sub)
    return parser


# --- commands -------------------------------------------------------------------------------


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
    algorithms, dialects = args.algorithms, args.dialects
    todo = MEASURES if args.command == "all" else (args.command,)
    method = getattr(args, "method", "auto")
    run = Run(root, args.seed, sized(SIZES[args.size], args), argv,
              plan={"experiments": list(todo), "algorithms": algorithms, "dialects": dialects,
                    "method": method})

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
    if "paho" in algorithms and "mqtt" not in dialects:
        print("note: paho's MQTTMatcher is measured on the MQTT form only, and --dialects "
              "excludes mqtt: it is left out of the single-thread experiments",
              file=sys.stderr)
    print(f"== {args.command} (size {args.size}, seed {args.seed}) on {run.build} "
          f"[{sys.executable}] -> {run.dir}", file=sys.stderr, flush=True)
    hint = (" (the publication size: the longest of all)" if args.size == "full" else
            "; --size full, the publication size, takes many times longer")
    print(f"== {estimate_line(run, list(todo), hint)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    status = _run_steps(run, [(name, steps[name]) for name in todo])
    if status:
        return status
    prog = _prog()
    print(f"total {time.monotonic() - started:.0f} s. Next: {prog} charts --from {root}; "
          f"{prog} summary --from {root}; {prog} paper --from {root}")
    return 0


def _run_steps(run: Run, steps: list[tuple[str, Callable[[], None]]]) -> int:
    """Run the experiments in turn; write how the run ended into its run file (complete,
    interrupted by Ctrl-C or SIGTERM, or failed) and return 0, 130 or 143 (or re-raise)."""
    current = None
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        for current, step in steps:
            t0 = time.monotonic()
            step()
            run.step_done(current, time.monotonic() - t0)
            print(f"== {current} done in {time.monotonic() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    except KeyboardInterrupt as exc:
        return end_interrupted(run, current, exc)
    except BaseException as exc:
        end_failed(run, current, exc)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    run.finish("complete")
    run.report()
    report_run(run)
    return 0


#: The paper's template in a checkout (an installed package has none).
PAPER_TEMPLATE = PROJECT_ROOT / "paper" / "paper.template.md"


def _paper(args: argparse.Namespace) -> int:
    from .report.paper import run_paper

    template = args.template or PAPER_TEMPLATE
    if not template.is_file():
        print("error: paper: the paper is built from a checkout of the repository, and this "
              f"installed package has no {template.relative_to(PROJECT_ROOT)}: run `make "
              "paper` in a checkout, or give --template FILE", file=sys.stderr)
        return 2
    out = args.out or paper_build_dir(args.source) / "paper.md"
    why = file_problem(out)
    if why:
        print(f"error: paper: the default --out {out} {why}", file=sys.stderr)
        return 2
    print(f"wrote {run_paper(args.source, template, out)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        # (compare --write-example measures nothing, and refuses --python: run_compare)
        if getattr(args, "python", None) and not getattr(args, "write_example", None):
            os.environ[PROG_ENV] = _prog()  # the child's hints name what the user typed
            return reexec(args.python, argv, FOUND_PYTHONS.get(args.python, "not checked"))
        if args.command == "charts":
            problem = missing("charts", ("matplotlib",))
            if problem:
                print(f"error: {problem}", file=sys.stderr)
                return 2
            from .report.charts import run_charts

            out = args.out if args.out is not None else paper_build_dir(args.source) / "figures"
            why = dir_problem(out)
            if why:
                print(f"error: charts: the default --out {out} {why}", file=sys.stderr)
                return 2
            for path in run_charts(args.source, out, tuple(args.formats)):
                print(f"wrote {path}")
            return 0
        if args.command == "compare":
            from .compare import run_compare

            return run_compare(args, argv)
        if args.command == "pipeline":
            from .pipeline.cli import run as run_pipeline

            return run_pipeline(args)
        if args.command == "paper":
            return _paper(args)
        if args.command == "publish":
            from .report.publish import run_publish

            for path in run_publish(args.source, args.allow_sizes, args.allow_missing):
                print(f"wrote {path}")
            return 0
        if args.command == "summary":
            from .report.summary import run_summary

            rows = run_summary(args.source)
            return 0 if rows else 1
        return _measure(args, argv)
    except WriteError as exc:
        print(f"error: {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
