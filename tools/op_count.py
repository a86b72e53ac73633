"""What one matcher operation executes, counted in bytecodes rather than timed: CSTrie against
LockedTrie(cache=False), on whatever interpreter runs this (a count is the same on every
run, so two trees or two interpreters compare without noise).

Cases, each an operation the benchmarks time:

- ``hot``: the latency benchmark's lookup (``foo.bar.baz.qux.quux`` beside the hot
  population of 1,000 random 5-word patterns and ``foo.*.baz.qux.quux``; the root is a
  wide level, split into hash levels in the CS-trie);
- ``cold``: the same lookup beside that one pattern (the root is one flat C-node);
- ``dense``: the dense workload's lookups (850 wildcard filters), mean over 200 topics;
- ``inbox``: one subscribe + unsubscribe of a fresh inbox ``_INBOX.<new>.reply`` beside
  ``--width`` existing ones (the level-width benchmark's write);
- ``crowd``: one subscribe of a new subscriber to ``stock.>`` beside ``--crowd`` others (the
  build benchmark's step).

For each: bytecodes per operation, then the kinds that cost most when the interpreter does
not specialize them (free-threaded 3.13): attribute loads (LOAD_ATTR, and 3.11's
LOAD_METHOD), attribute stores, global loads and calls; and the functions that executed the
most bytecodes. Counts come from ``sys.settrace`` opcode events, after warm-up operations;
the operation runs as many times untraced first, so that lazily built state (and the
CS-trie's hint for unrecorded walks) is in place.

    python tools/op_count.py [--cases hot,inbox] [--width 10000] [--crowd 40000] [--json F]
"""

from __future__ import annotations

import argparse
import collections
import dis
import json
import sys
from itertools import count as counter
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchenv import environment, headline  # noqa: E402

from baselines import LockedTrie  # noqa: E402
from ctrie import CSTrie  # noqa: E402
from experiments import workloads  # noqa: E402

SEED = 20261123
#: Opcode groups reported beside the total (names differ between 3.11 and 3.13).
GROUPS = {
    "attribute loads": ("LOAD_ATTR", "LOAD_METHOD"),
    "attribute stores": ("STORE_ATTR",),
    "global loads": ("LOAD_GLOBAL",),
    "calls": ("CALL", "CALL_KW", "CALL_FUNCTION_EX"),
}


def count(op: Callable[[], Any], times: int) -> tuple[collections.Counter, collections.Counter]:
    """Opcode names and functions executed by ``times`` calls of ``op``, after ``times``
    untraced ones (a CS-trie lookup walks unrecorded only after two quiet lookups)."""
    for _ in range(times):
        op()
    names: collections.Counter = collections.Counter()
    funcs: collections.Counter = collections.Counter()
    opname = dis.opname

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            names[opname[code.co_code[frame.f_lasti]]] += 1
            funcs[f"{Path(code.co_filename).name}:{code.co_name}"] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(times):
            op()
    finally:
        sys.settrace(None)
    return names, funcs


def cases(width: int, crowd: int) -> dict[str, Callable[[Any], tuple[Callable[[], Any], int]]]:
    """Per case: a builder taking a matcher class's factory and returning (operation, times)."""
    hot = workloads.hot_population(SEED, 1000, 5)
    dense = workloads.dense_workload(SEED)

    def filled(make: Callable[[], Any], pairs: list[tuple[str, Any]]) -> Any:
        m = make()
        for p, s in pairs:
            m.subscribe(p, s)
        return m

    def lookups(pairs: list[tuple[str, Any]], topics: list[str]):
        def build(make: Callable[[], Any]) -> tuple[Callable[[], Any], int]:
            m = filled(make, pairs)
            it = counter()
            look = m.lookup
            return (lambda: look(topics[next(it) % len(topics)])), max(20, len(topics))
        return build

    def inbox(make: Callable[[], Any]) -> tuple[Callable[[], Any], int]:
        m = filled(make, [(f"_INBOX.{i}.reply", "s") for i in range(width)])
        it = counter()

        def op() -> None:
            p = f"_INBOX.new{next(it)}.reply"
            m.subscribe(p, 1)
            m.unsubscribe(p, 1)
        return op, 20

    def crowd_step(make: Callable[[], Any]) -> tuple[Callable[[], Any], int]:
        m = filled(make, [("stock.>", i) for i in range(crowd)])
        it = counter()
        return (lambda: m.subscribe("stock.>", -1 - next(it))), 20

    numbered = [(p, i) for i, p in enumerate([*hot, workloads.LATENCY_PATTERN])]
    return {
        "hot": lookups(numbered, [workloads.LATENCY_TOPIC]),
        "cold": lookups([(workloads.LATENCY_PATTERN, 0)], [workloads.LATENCY_TOPIC]),
        "dense": lookups([(p, i) for i, p in enumerate(dense.filters)], dense.topics[:200]),
        "inbox": inbox,
        "crowd": crowd_step,
    }


MATCHERS: dict[str, Callable[[], Any]] = {
    "CSTrie": lambda: CSTrie("nats"),
    "LockedTrie(cache=False)": lambda: LockedTrie(dialect="nats", cache=False),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="hot,cold,dense,inbox,crowd")
    ap.add_argument("--width", type=int, default=10_000, help="existing inboxes (inbox case)")
    ap.add_argument("--crowd", type=int, default=40_000, help="subscribers of stock.> (crowd)")
    ap.add_argument("--top", type=int, default=4, help="functions listed per matcher")
    ap.add_argument("--json", type=Path, help="also write the counts here")
    args = ap.parse_args()
    builders = cases(args.width, args.crowd)
    unknown = [c for c in args.cases.split(",") if c not in builders]
    if unknown:  # before any case runs: a misspelt second case must not cost the first's run
        ap.error(f"unknown case {unknown[0]!r}: choose from {', '.join(builders)}")
    root = str(Path(__file__).resolve().parent.parent)
    env = environment([root], width=args.width, crowd=args.crowd, seed=SEED)
    print(f"# {headline(env)}, commit {env['commits'][root]}", flush=True)
    out: dict[str, dict[str, Any]] = {}
    for case in args.cases.split(","):
        for name, make in MATCHERS.items():
            op, times = builders[case](make)
            names, funcs = count(op, times)
            total = sum(names.values()) / times
            groups = {g: sum(names[n] for n in ops) / times for g, ops in GROUPS.items()}
            out[f"{case}/{name}"] = {"bytecodes": total, **groups,
                                     "functions": {f: n / times for f, n in funcs.items()}}
            print(f"{case:6s} {name:24s} {total:8.1f} bytecodes  "
                  + "  ".join(f"{g} {v:.1f}" for g, v in groups.items()), flush=True)
            top = ", ".join(f"{f} {n / times:.0f}" for f, n in funcs.most_common(args.top))
            print(f"       {'':24s} most: {top}", flush=True)
        cs, lt = out[f"{case}/CSTrie"], out[f"{case}/LockedTrie(cache=False)"]
        print(f"       {'CSTrie / LockedTrie':24s} {cs['bytecodes'] / lt['bytecodes']:8.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"env": env, "counts": out}, indent=1))


if __name__ == "__main__":
    main()
