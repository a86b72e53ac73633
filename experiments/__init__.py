"""The experiment harness: ``python -m experiments <experiment> ...``.

It reproduces the experiments of *Fast Topic Matching* and *Breaking and Entering* (see
``methodology.md``) for every matcher of the package and for paho-mqtt's ``MQTTMatcher``:

- ``latency``: cold and hot latency of subscribe, unsubscribe and lookup, and lookup on a
  dense wildcard workload (pyperf, or a stdlib timing fallback where pyperf is not
  installed);
- ``throughput``: messages per second on the 3-digit workload;
- ``memory``: bytes held per subscription (tracemalloc) at 1,000 subscriptions and growth;
- ``scaling``: wall time of concurrent rounds at 1 to 16 threads (50/50, 90/10), on one shared
  matcher and, as its limit, on one matcher per thread built by that thread;
- ``lockfree``: the second article's insert:lookup 1:1 and 1:3 comparison;
- ``contention``, ``ownership``, ``starvation``: sharing a matcher between threads;
- ``sharing``: why sharing costs: shared vs one matcher per thread built by its reader, at
  several write shares, with ablations, event counters and a round-length sweep;
- ``level_width``: one write and one lookup under 1 to 110,000 sibling inboxes, and one
  write to a pattern of as many subscribers;
- ``primitives``: cost of the atomic and locking primitives the matchers are built on;
- ``charts`` and ``summary``: figures and the target-ratio table, from result files only;
- ``compare``: the matchers on *your* workload, a file of subscriptions and one of topics
  (validated first; see :mod:`experiments.measure.compare` and the example workloads in
  ``examples/``).

Measuring needs only the standard library, ``cereggii`` and this package; pyperf, tqdm and
paho-mqtt are used where installed, matplotlib only by ``charts`` and ``compare``'s chart,
and the pipeline's modules only by ``pipeline`` (``extras`` says which extra brings what; a
command missing one says in one line which to install).

The folders follow the study's chain, workloads -> measurements -> result records ->
figures and tables -> paper:

=====================  ===============================================================
``workloads``          the seeded workloads of ``methodology.md``, and the examples of
                       ``compare``
``compare_files``      ``compare``'s workload files: format, validation, examples
``compare``            ``compare``'s run: files -> ``measure/compare`` -> ``report/compare``
``measure/``           one module per experiment (see :mod:`experiments.measure`)
``env``, ``records``   the run metadata every record carries and the result files;
                       reading them back
``report/``            figures, the target summary, the paper's tables and the paper,
                       from records only (see :mod:`experiments.report`)
``pipeline/``          the Spark pipeline: generate, route and aggregate at scale
=====================  ===============================================================

Shared plumbing beside them: ``cli`` (the argument parser), ``rerun`` (the ``--python``
re-exec), ``config`` (the run sizes), ``registry`` (the matchers measured, their
constructors and limits), ``progress`` (progress bars), ``preflight`` (what a command
checks before it starts: output folders it can write, the ``--python`` it is given) and
``extras`` (the optional dependencies).
Imports go one way: ``report`` takes only the names of cells from ``measure`` (which
algorithms and workloads an experiment has) and ``measure`` never imports ``report``;
``tests/test_package_layout.py`` checks there is no import circle.
"""

__all__: list[str] = []
