"""The experiment harness: ``python -m experiments <experiment> ...``.

It reproduces the experiments of *Fast Topic Matching* and *Breaking and Entering* (see
``methodology.md``) for every matcher of the package and for paho-mqtt's ``MQTTMatcher``:

- ``latency``: cold and hot latency of subscribe, unsubscribe and lookup, and lookup on a
  dense wildcard workload (pyperf, or a stdlib timing fallback where pyperf is not
  installed);
- ``throughput``: messages per second on the 3-digit workload;
- ``memory``: bytes held per subscription (tracemalloc) at 1,000 subscriptions and growth;
- ``scaling``: wall time of concurrent rounds at 1 to 16 threads (50/50, 90/10);
- ``lockfree``: the second article's insert:lookup 1:1 and 1:3 comparison;
- ``contention``, ``ownership``, ``starvation``: sharing a matcher between threads;
- ``sharing``: why sharing costs: shared vs one matcher per thread built by its reader, at
  several write shares, with ablations, event counters and a round-length sweep;
- ``level_width``: one write and one lookup under 1 to 100,000 sibling inboxes;
- ``primitives``: cost of the atomic and locking primitives the matchers are built on;
- ``charts`` and ``summary``: figures and the target-ratio table, from result files only.

Measuring needs only the standard library, ``cereggii`` and this package; pyperf, tqdm and
paho-mqtt are used where installed, matplotlib only by ``charts``. Modules:

=================  =====================================================================
``cli``            the argument parser and the ``--python`` re-exec
``config``         the three run sizes (``full``, ``quick``, ``smoke``)
``env``            the build and run metadata every record carries; result files
``records``        reading result files back (charts, summary, tests)
``workloads``      the seeded workloads of ``methodology.md``
``registry``       the matchers measured, their constructors and their limits
``microbench``     per-operation timing: pyperf worker groups or the stdlib fallback
``benchfuncs``     the timed loops of ``latency`` and ``primitives``
``throughput``, ``memory``, ``concurrency``, ``ownership``, ``starvation``,
``level_width``, ``sharing``: the other experiments
``charts``, ``summary``, ``sharing_report``: figures, targets, and the sharing
experiment's tables with its many-core model
=================  =====================================================================
"""

__all__: list[str] = []
