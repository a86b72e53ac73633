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
import sys
from dataclasses import replace
from pathlib import Path

from .compare_files import WorkloadError, read_workload, write_example
from .config import SIZES
from .env import Run, default_results_root
from .measure.compare import measure, options
from .report.compare import present
from .workloads import EXAMPLES

__all__ = ["run_compare"]


def run_compare(args: argparse.Namespace, argv: list[str]) -> int:
    """Run a parsed ``compare`` command line; return the exit status."""
    if args.write_example:
        name, folder = args.write_example
        if name not in EXAMPLES:
            print(f"error: --write-example: no example {name!r}; choose from "
                  f"{', '.join(EXAMPLES)}", file=sys.stderr)
            return 2
        for path in write_example(name, Path(folder), args.seed):
            print(f"wrote {path}")
        return 0
    if not (args.subscriptions and args.topics):
        print("error: compare needs --subscriptions FILE and --topics FILE (or "
              "--write-example NAME DIR)", file=sys.stderr)
        return 2
    try:
        wl = read_workload(args.subscriptions, args.topics, args.dialect, args.name)
    except WorkloadError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        print(f"error: {len(exc.problems)} problem(s) in the workload; nothing measured",
              file=sys.stderr)
        return 2
    print(f"== compare: {wl.describe()}", file=sys.stderr, flush=True)
    # compare's counts are its own options (in argv and every record's params), not a size.
    run = Run(args.out or default_results_root(), args.seed,
              replace(SIZES["full"], name="custom"), argv)
    try:
        records = measure(run, wl, options(args))
    except KeyboardInterrupt:
        run.finish("interrupted", experiment="compare", signal="SIGINT")
        raise
    except BaseException as exc:
        run.finish("failed", experiment="compare", error=f"{type(exc).__name__}: {exc}")
        raise
    run.finish("complete")
    chart = present(records, args.baseline, Path(args.chart) if args.chart
                    else run.new_path("compare", ".png"))
    run.report()
    if chart is not None and args.chart:
        print(f"  wrote {chart}")
    return 0
