"""The ``compare`` command's run: validate the workload files, measure, report.

``python -m experiments compare`` dispatches here. The steps are one module each, so that
``measure`` never imports ``report``: :mod:`experiments.compare_files` reads and validates
the files (any problem: exit status 2, nothing measured, nothing written),
:mod:`experiments.measure.compare` measures and writes the records (its docstring is the
command's documentation), and :mod:`experiments.report.compare` prints the table and draws
the chart from those records.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from . import registry
from .compare_files import WorkloadError, read_workload, write_example
from .config import SIZES
from .env import Run, default_results_root
from .estimate import estimate_line
from .measure.compare import measure, options
from .report.compare import present
from .rerun import end_failed, end_interrupted, report_run, terminate
from .text import count
from .workloads import EXAMPLES

__all__ = ["run_compare"]


def run_compare(args: argparse.Namespace, argv: list[str]) -> int:
    """Run a parsed ``compare`` command line; return the exit status."""
    if args.write_example:
        name, folder = args.write_example
        given = [o for o, v in (("--subscriptions", args.subscriptions),
                                ("--topics", args.topics), ("--python", args.python)) if v]
        if given:
            print(f"error: --write-example takes no {' or '.join(given)}: it writes the "
                  "example's two files and measures nothing (measure them with a second "
                  "compare command)", file=sys.stderr)
            return 2
        if not folder:  # Path("") is the working directory, as for --out
            print("error: --write-example: the folder must not be empty (give a folder; "
                  "'.' is the working directory)", file=sys.stderr)
            return 2
        if name not in EXAMPLES:
            print(f"error: --write-example: no example {name!r}; choose from "
                  f"{', '.join(EXAMPLES)}", file=sys.stderr)
            return 2
        for path in write_example(name, Path(folder), args.seed, args.overwrite):
            print(f"wrote {path}")
        return 0
    if args.overwrite:
        print("error: --overwrite goes with --write-example (a measuring run never replaces "
              "a file)", file=sys.stderr)
        return 2
    runnable = [a for a in args.algorithms if registry.dialects_for(a, [args.dialect])]
    if not registry.dialects_for(args.baseline, [args.dialect]) or not runnable:
        what = (f"--baseline {args.baseline}" if runnable
                else f"--algorithms {','.join(args.algorithms)}")
        print(f"error: {what} cannot run in the {args.dialect} dialect (paho's MQTTMatcher "
              "speaks MQTT only); choose another, or --dialect mqtt", file=sys.stderr)
        return 2
    if not (args.subscriptions and args.topics):
        print("error: compare needs --subscriptions FILE and --topics FILE (or "
              "--write-example NAME DIR)", file=sys.stderr)
        return 2
    try:
        wl = read_workload(args.subscriptions, args.topics, args.dialect, args.name)
    except WorkloadError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        print(f"error: {count(len(exc.problems), 'problem')} in the workload; nothing measured",
              file=sys.stderr)
        return 2
    for f in wl.files.values():
        if f.blank:
            print(f"skipped {count(f.blank, 'blank line')} in {f.path}", file=sys.stderr)
    print(f"== compare: {wl.describe()}", file=sys.stderr, flush=True)
    # compare's counts are its own options (in argv and every record's params), not a size;
    # the plan holds what changes the work, for the next run's estimate.
    opts = options(args)
    run = Run(args.out or default_results_root(), args.seed,
              replace(SIZES["full"], name="custom"), argv,
              plan={"experiments": ["compare"], "algorithms": opts.algorithms,
                    "dialect": wl.dialect, "threads": opts.threads,
                    "write_shares": opts.write_shares, "rounds": opts.rounds, "ops": opts.ops,
                    "workload": {k: f.sha256 for k, f in wl.files.items()}})
    print(f"== {estimate_line(run, ['compare'])}", file=sys.stderr, flush=True)
    previous = signal.signal(signal.SIGTERM, terminate)
    started = time.monotonic()
    try:
        records = measure(run, wl, opts)
    except KeyboardInterrupt as exc:
        return end_interrupted(run, "compare", exc)
    except BaseException as exc:
        end_failed(run, "compare", exc)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    run.step_done("compare", time.monotonic() - started)
    run.finish("complete")
    chart = present(records, args.baseline, Path(args.chart) if args.chart
                    else run.new_path("compare", ".png"))
    run.report()
    report_run(run)  # in a --python re-run: what was written, for the command that started it
    if chart is not None and args.chart:
        print(f"  wrote {chart}")
    return 0
