"""The three run sizes: ``full`` (publication), ``quick`` (CI) and ``smoke`` (the smoke test).

Every experiment runs the same code at every size; a size only changes counts, rounds and
timing budgets, and every record carries the counts it was measured with. Workload-defining
constants of ``methodology.md`` (1,000 hot subscriptions, 1,000 operations per worker, the
3-digit workload's 1,000 subscriptions) and of the dense lookup workload (850 filters, 2,000
topics) are kept at ``quick`` size and shrunk only for ``smoke``, whose numbers are
meaningless and only prove that the code runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["LEAF_PEAKS", "SIZES", "Size"]

#: The widths near which a write under the CS-trie's word level copies the most. A write
#: copies the leaf its word lands in, so its cost over the width is a sawtooth: the leaves
#: fill up to ``LEAF_MAX`` (128) words, then split on 5 more hash bits (ctrie.nodes). The
#: 32 hash slices of a level fill unevenly (about +-11 words around the mean), so the first
#: ones split well before the mean reaches 128, and at ``LEAF_MAX * 32**k`` about half have:
#: the fullest point comes at about 0.85 of that width, not at it. Found by building the
#: level (the mean size of the leaf a fresh inbox lands in, PYTHONHASHSEED 1 to 3): 103-109
#: words at 3,300-3,700 and 104-106 at 110,000-115,000, against 68-71 at 4,096 and 62-66 at
#: 131,072 (half the slices split, most into leaves of 4), 31 at 1,000, 10 at 10,000 and 97
#: at 100,000. So 1,000 and 10,000 sit in the sawtooth's troughs and 100,000 near its
#: second peak. tests/test_level_width.py checks these widths against the trie itself, so a
#: change of ``LEAF_MAX`` that moves the peaks fails there until this is updated.
LEAF_PEAKS = (3_500, 110_000)


@dataclass(frozen=True)
class Size:
    """Counts, rounds and timing budgets of one run size."""

    name: str
    # latency: the hot population, the real-work batch, the distinct-lookup pool
    hot_population: int
    latency_batch: int
    lookup_pool: int
    # latency, dense wildcard lookup: distinct MQTT filters, and the topics cycled through
    dense_filters: int
    dense_topics: int
    # per-operation timing: pyperf options, and the same budget for the stdlib fallback
    pyperf_args: tuple[str, ...]
    timeit_warmups: int
    timeit_values: int
    timeit_min_time: float
    # throughput
    throughput_subscriptions: int
    throughput_messages: int
    throughput_rounds: int
    # memory
    memory_sizes: tuple[int, ...]
    memory_rounds: int
    #: Pattern x topic matches the inverted bitmap may spend populating one memory cell.
    inverted_scan_budget: float
    # scaling and lockfree
    scaling_threads: tuple[int, ...]
    scaling_ops: int
    scaling_population: int
    scaling_rounds: int
    lockfree_groups: tuple[int, ...]  # how many (1 inserter + r lookers) groups
    lockfree_ops: int
    lockfree_rounds: int
    # contention: operations per worker and rounds of the shared/per-thread comparison
    contention_ops: int
    contention_rounds: int
    # sharing: thread counts, operations per worker, rounds, write shares, and the round
    # lengths of its round-length sweep (see experiments/measure/sharing.py)
    sharing_threads: tuple[int, ...]
    sharing_ops: int
    sharing_rounds: int
    sharing_write_shares: tuple[float, ...]
    sharing_round_ops: tuple[int, ...]
    # ownership: inbox subjects, lookups per reader and rounds of builder vs other reader
    ownership_width: int
    ownership_lookups: int
    ownership_rounds: int
    # starvation: seconds of one reader (and one writer) per round, and rounds per cell
    starvation_seconds: float
    starvation_rounds: int
    # level width: the widths, fresh inboxes written per round (at most), interleaved rounds
    width_levels: tuple[int, ...]
    width_ops: int
    width_rounds: int

    def as_params(self) -> dict:
        """The size as a plain dict (recorded in the run manifest)."""
        return asdict(self)


SIZES: dict[str, Size] = {
    "full": Size(
        name="full",
        hot_population=1000,
        latency_batch=100,
        lookup_pool=2048,
        dense_filters=850,
        dense_topics=2000,
        # pyperf's defaults but 10 worker processes instead of 20 (30 values per cell, each
        # a 0.1 s loop): about 170 cells per build, so both builds fit in about an hour on
        # 2 cores; the spread each record carries shows whether 30 values were enough.
        pyperf_args=("--processes", "10"),
        timeit_warmups=1,
        timeit_values=30,
        timeit_min_time=0.1,
        throughput_subscriptions=1000,
        throughput_messages=100_000,
        throughput_rounds=5,
        memory_sizes=(1000, 10_000, 100_000),
        memory_rounds=3,
        inverted_scan_budget=5e7,  # about a minute
        scaling_threads=(1, 2, 4, 8, 12, 16),
        scaling_ops=1000,
        scaling_population=1000,
        scaling_rounds=15,  # a round lasts milliseconds: many rounds for a stable median
        lockfree_groups=(1, 2, 3, 4, 6, 8),
        lockfree_ops=1000,
        lockfree_rounds=15,
        contention_ops=20000,
        contention_rounds=9,
        sharing_threads=(1, 2),
        sharing_ops=10_000,
        sharing_rounds=5,
        sharing_write_shares=(0.0, 0.01, 0.1, 0.5),
        sharing_round_ops=(1000, 10_000, 100_000),
        ownership_width=10_000,
        ownership_lookups=100_000,
        ownership_rounds=7,
        starvation_seconds=2.0,
        starvation_rounds=5,
        width_levels=(1, 100, 1000, LEAF_PEAKS[0], 10_000, 100_000, LEAF_PEAKS[1]),
        width_ops=2000,
        width_rounds=7,
    ),
    "quick": Size(
        name="quick",
        hot_population=1000,
        latency_batch=100,
        lookup_pool=2048,
        dense_filters=850,
        dense_topics=2000,
        pyperf_args=("--processes", "1", "--values", "3", "--warmups", "1", "--min-time", "0.005"),
        timeit_warmups=1,
        timeit_values=3,
        timeit_min_time=0.005,
        throughput_subscriptions=1000,
        throughput_messages=10_000,
        throughput_rounds=3,
        memory_sizes=(1000, 10_000),
        memory_rounds=1,
        inverted_scan_budget=5e6,
        scaling_threads=(1, 2, 4),
        scaling_ops=1000,
        scaling_population=1000,
        scaling_rounds=5,
        lockfree_groups=(1, 2),
        lockfree_ops=1000,
        lockfree_rounds=5,
        contention_ops=5000,
        contention_rounds=5,
        sharing_threads=(1, 2),
        sharing_ops=3000,
        sharing_rounds=3,
        sharing_write_shares=(0.0, 0.1),
        sharing_round_ops=(1000, 10_000),
        ownership_width=10_000,
        ownership_lookups=30_000,
        ownership_rounds=3,
        starvation_seconds=0.5,
        starvation_rounds=3,
        width_levels=(1, 100, 1000, LEAF_PEAKS[0], 10_000),
        width_ops=2000,
        width_rounds=5,
    ),
    "smoke": Size(
        name="smoke",
        hot_population=50,
        latency_batch=10,
        lookup_pool=64,
        dense_filters=100,
        dense_topics=64,
        pyperf_args=("--debug-single-value",),
        timeit_warmups=0,
        timeit_values=2,
        timeit_min_time=0.0005,
        throughput_subscriptions=100,
        throughput_messages=300,
        throughput_rounds=1,
        memory_sizes=(100, 300),
        memory_rounds=1,
        inverted_scan_budget=5e6,
        scaling_threads=(1, 2),
        scaling_ops=50,
        scaling_population=50,
        scaling_rounds=3,
        lockfree_groups=(1,),
        lockfree_ops=50,
        lockfree_rounds=2,
        contention_ops=200,
        contention_rounds=2,
        sharing_threads=(1, 2),
        sharing_ops=100,
        sharing_rounds=2,
        sharing_write_shares=(0.0, 0.1),
        sharing_round_ops=(50, 200),
        ownership_width=200,
        ownership_lookups=500,
        ownership_rounds=2,
        starvation_seconds=0.02,
        starvation_rounds=1,
        width_levels=(1, 100, 1000),
        width_ops=50,
        width_rounds=3,
    ),
}
