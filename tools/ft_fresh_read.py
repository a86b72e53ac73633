#!/usr/bin/env python3
"""Standalone reproducer: on free-threaded CPython, a reader of a copy-on-write set pays for
every set the writer publishes, where a reader of a set updated in place does not.

Usage: ``python tools/ft_fresh_read.py [--sizes 10,100,1000] [--seconds 1] [--rounds 3]
[--json]``. Standard library only, so it can be rerun as is on 3.14t and later.

Two threads. The reader loops ``frozenset().union(cur, a, b, c)``: the union a lookup
returns, of one published set of ``size`` members (mortal strings, made by the main thread)
and three of one member, as the CS-trie's lookup of ``stock.nyse.ibm`` beside the
subscribers of ``stock.>`` builds it. The writer, on the other core, does one of:

- ``none``: nothing (the reader alone);
- ``copy-publish``: the CS-trie's write. It makes ``cur | {x}`` and publishes it, then makes
  ``cur - {x}`` and publishes that. Every union reads a set the other thread just built;
- ``copy-private``: the same two copies, published nowhere. The reader keeps reading the
  first set. This separates the writer's work from the reader's reading of fresh sets;
- ``in-place``: the locked trie's write, ``cur.add(x)`` then ``cur.discard(x)`` on the one
  shared ``set`` the reader unions (3.13t locks a set for each operation, so this is safe).

It prints the reader's unions per second (median of ``--rounds``, min-max) and the
fraction of its rate alone, and the writer's operations per second.

What it showed on this project's machine (2 cores, 3.13.15t, two runs, 100 members): beside
``copy-publish`` the reader kept 0.08-0.15 of its rate alone, beside ``copy-private``
0.21-0.40, beside ``in-place`` 0.69-0.85. So a copy of the set the reader reads costs the
reader even unpublished (both threads then write the reference counts of the same members,
whose cache lines move between the cores), and a published copy costs it more (the reader
reads a table the other core just wrote). With ``--immortal`` members (no reference count
written) ``copy-private`` cost the reader no more than ``in-place`` (0.72 against 0.68, one
run), and ``copy-publish`` still cost it most (0.39). On the GIL build the reader keeps about half its
rate beside any of the writers: its share of the interpreter. The figures of a run are in
the closing note of the stop that added this tool; rerun it rather than trust them.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import sysconfig
import threading
import time

WRITERS = ("none", "copy-publish", "copy-private", "in-place")


def one_round(writer: str, size: int, seconds: float, immortal: bool = False
              ) -> tuple[float, float]:
    """(reader unions per second, writer operations per second) of one round."""
    members: list = list(range(size)) if immortal else [f"s{i}" for i in range(size)]
    cur: list = [set(members) if writer == "in-place" else frozenset(members)]
    others = (frozenset(["a"]), frozenset(["b"]), frozenset(["c"]))
    x = -1 if immortal else "joiner"
    stop = threading.Event()
    counts = [0, 0]
    start = threading.Barrier(3 if writer != "none" else 2)

    def write() -> None:
        n = 0
        private = cur[0]
        start.wait()
        while not stop.is_set():
            if writer == "copy-publish":
                cur[0] = cur[0] | {x}
                cur[0] = cur[0] - {x}
            elif writer == "copy-private":
                private = (private | {x}) - {x}
            else:  # in-place
                s = cur[0]
                s.add(x)
                s.discard(x)
            n += 1
        counts[1] = n

    def read() -> None:
        n = 0
        empty = frozenset()
        start.wait()
        while not stop.is_set():
            empty.union(cur[0], *others)
            n += 1
        counts[0] = n

    threads = [threading.Thread(target=read)]
    if writer != "none":
        threads.append(threading.Thread(target=write))
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    elapsed = time.perf_counter() - t0
    for t in threads:
        t.join()
    return counts[0] / elapsed, counts[1] / elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,1000", help="members of the published set")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per round (default 1)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per cell (default 3)")
    ap.add_argument("--immortal", action="store_true",
                    help="members are small ints (immortal since 3.12: no reference count "
                         "is written), at most 256 of them, to separate that cost out")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes {args.sizes!r}: give whole numbers separated by commas, e.g. 10,100")
    if any(s < 1 for s in sizes):
        ap.error(f"--sizes {args.sizes!r}: every size must be at least 1")
    if args.immortal and max(sizes) > 256:
        ap.error(f"--immortal: at most 256 members (the small ints 0-255), not {max(sizes)}")
    if args.seconds <= 0 or args.rounds < 1:
        ap.error("--seconds must be positive and --rounds at least 1")
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    env = {"python": platform.python_version(), "implementation": platform.python_implementation(),
           "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
           "gil_enabled": gil, "cpus": __import__("os").cpu_count(),
           "seconds": args.seconds, "rounds": args.rounds, "immortal": args.immortal}
    results = []
    if not args.json:
        print(f"# Python {env['python']}, free-threaded build {env['free_threaded_build']}, "
              f"GIL {'on' if gil else 'off'}, {env['cpus']} CPUs, {args.rounds} rounds of "
              f"{args.seconds:g} s (rounds interleaved over the writers), members "
              f"{'small ints (immortal)' if args.immortal else 'strings'}", flush=True)
    for size in sizes:
        runs: dict[str, list[tuple[float, float]]] = {w: [] for w in WRITERS}
        for _ in range(args.rounds):
            for w in WRITERS:  # interleaved, so that a change of load hits every writer
                runs[w].append(one_round(w, size, args.seconds, args.immortal))
        alone = statistics.median(r for r, _ in runs["none"])
        for w in WRITERS:
            rs = [r for r, _ in runs[w]]
            ws = [x for _, x in runs[w]]
            rec = {"size": size, "writer": w, "reader_per_s": statistics.median(rs),
                   "reader_min": min(rs), "reader_max": max(rs),
                   "fraction": statistics.median(rs) / alone,
                   "writer_per_s": statistics.median(ws)}
            results.append(rec)
            if not args.json:
                print(f"size {size:5d}  {w:13s} reader {rec['reader_per_s']:10,.0f}/s "
                      f"[{min(rs):,.0f}-{max(rs):,.0f}]  fraction {rec['fraction']:.2f}  "
                      f"writer {rec['writer_per_s']:10,.0f}/s", flush=True)
    if args.json:
        print(json.dumps({"env": env, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
