"""The pyperf script of one benchmark group (run by :mod:`experiments.measure.microbench`).

    python -m experiments.measure._pyperf_worker --suite latency --group cstrie:nats \\
        --bench-seed 1 --bench-size quick [--only NAME,NAME] [pyperf options] -o out.json

pyperf re-runs this module in worker processes (``--worker``) and parses ``sys.argv``
itself, which is why every group runs in a subprocess of its own. Nothing happens at import
time: the benchmarks' state is built on the first call of each time function, inside the
worker process that measures it.
"""

from __future__ import annotations

import argparse
from typing import Any

from .microbench import benches

# -P: the working directory stays off sys.path (a folder experiments/ there is not ours).
_PROGRAM = ("-P", "-m", "experiments.measure._pyperf_worker")


def _add_cmdline_args(cmd: list[str], args: argparse.Namespace) -> None:
    """Pass this script's own options on to pyperf's worker processes."""
    cmd.extend(["--suite", args.suite, "--group", args.group,
                "--bench-seed", str(args.bench_seed), "--bench-size", args.bench_size])
    if args.only:
        cmd.extend(["--only", args.only])


def main(argv: list[str] | None = None) -> Any:
    import pyperf

    runner = pyperf.Runner(add_cmdline_args=_add_cmdline_args, program_args=_PROGRAM)
    p = runner.argparser
    p.add_argument("--suite", required=True, choices=("latency", "primitives"))
    p.add_argument("--group", required=True, help="latency: ALGORITHM:DIALECT")
    p.add_argument("--bench-seed", type=int, required=True)
    p.add_argument("--bench-size", required=True)
    p.add_argument("--only", default="", help="comma-separated benchmark names")
    args = runner.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    for bench in benches(args.suite, args.group, args.bench_seed, args.bench_size):
        if bench.skip is not None or (only is not None and bench.name not in only):
            continue
        runner.bench_time_func(bench.name, bench, inner_loops=bench.inner_loops)


if __name__ == "__main__":
    main()
