"""What len() costs a CS-trie, and what it costs the writers beside it.

On a trie of 40,000 subscriptions (20,000 MQTT devices, ``devices/<i>/telemetry`` and
``devices/<i>/status``), for each source tree given (``--tree DIR``, repeatable; default this
checkout), in a child process of the running interpreter, rounds interleaved between trees:

- ``len()``: the median time of one call (goal: under 100 us);
- writes per second of one thread (a subscribe+unsubscribe pair of a new device's pattern)
  with no other thread, and beside a monitor thread calling ``len()`` every 10 ms; the
  ratio (goal: at least 0.5);
- the first subscribe+unsubscribe pair after a ``read_only_snapshot()`` and after a
  ``len()``: the snapshot makes that write renew each level it passes.

Prints the interpreter, GIL state and seed, then medians with min-max over the rounds.

    python tools/len_cost.py --tree /work/wt-before --tree . [--rounds 3] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEVICES = 20_000
MONITOR_PERIOD = 0.010


def child(tree: str, seconds: float, seed: int) -> dict:
    """One round on the ``ctrie`` of ``tree``; returns the measurements."""
    sys.path.insert(0, tree)
    import random
    import threading
    import time

    import ctrie
    from ctrie import CSTrie

    assert str(Path(ctrie.__file__).resolve()).startswith(str(Path(tree).resolve())), ctrie.__file__
    rnd = random.Random(seed)
    t = CSTrie("mqtt")
    for i in range(DEVICES):
        t.subscribe(f"devices/{i}/telemetry", i)
        t.subscribe(f"devices/{i}/status", i)
    assert len(t) == 2 * DEVICES
    clock = time.perf_counter

    calls = []
    for _ in range(30):
        t0 = clock()
        len(t)
        calls.append(clock() - t0)

    def write_rate(with_monitor: bool) -> float:
        stop = threading.Event()
        monitor_calls = [0]

        def monitor() -> None:
            while not stop.is_set():
                len(t)
                monitor_calls[0] += 1
                time.sleep(MONITOR_PERIOD)

        th = threading.Thread(target=monitor, daemon=True) if with_monitor else None
        if th:
            th.start()
        n = 0
        t0 = clock()
        end = t0 + seconds
        while clock() < end:
            p = f"devices/{DEVICES + n}/telemetry"
            t.subscribe(p, n)
            t.unsubscribe(p, n)
            n += 1
        rate = n / (clock() - t0)
        stop.set()
        if th:
            th.join()
        return rate

    alone = write_rate(False)
    beside = write_rate(True)

    def first_write_after(take) -> float:
        times = []
        for _ in range(10):
            take()
            p = f"devices/{rnd.randrange(DEVICES)}/telemetry"
            t0 = clock()
            t.subscribe(p, "x")
            t.unsubscribe(p, "x")
            times.append(clock() - t0)
        return statistics.median(times)

    after_snapshot = first_write_after(t.read_only_snapshot)
    after_len = first_write_after(lambda: len(t))
    t.check()
    return {
        "len_us": statistics.median(calls) * 1e6,
        "writes_alone": alone,
        "writes_beside_len": beside,
        "ratio": beside / alone,
        "first_write_after_snapshot_ms": after_snapshot * 1e3,
        "first_write_after_len_ms": after_len * 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", help="a source tree holding ctrie/ (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="per write-rate cell")
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.seconds, args.seed)))
        return
    trees = args.tree or [str(ROOT)]
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print(f"Python {sys.version.split()[0]} ({sys.executable}), GIL {'on' if gil else 'off'}, "
          f"seed {args.seed}, {args.rounds} rounds, {args.seconds} s per write cell, "
          f"{2 * DEVICES} subscriptions")
    results: dict[str, list[dict]] = {tree: [] for tree in trees}
    for r in range(args.rounds):
        for tree in trees:  # interleaved, so that a load change hits every tree alike
            out = subprocess.run([sys.executable, __file__, "--child", tree, "--seconds",
                                  str(args.seconds), "--seed", str(args.seed + r)],
                                 capture_output=True, text=True, check=True)
            results[tree].append(json.loads(out.stdout))
    for tree, rows in results.items():
        print(f"\n{tree}")
        for key in rows[0]:
            vals = [row[key] for row in rows]
            print(f"  {key:<32} median {statistics.median(vals):>12.3f}   "
                  f"min {min(vals):>12.3f}   max {max(vals):>12.3f}")


if __name__ == "__main__":
    main()
