"""Measuring: one module per experiment, each writing result records through
:class:`experiments.env.Run` (nothing here reads records or draws).

=================  =====================================================================
``microbench``     per-operation timing of benchmark groups: pyperf worker processes
                   (``_pyperf_worker``) or the stdlib fallback
``bench``          one benchmark: a name and a pyperf-style time function
``latency``        cold/hot subscribe, unsubscribe and lookup; the dense lookup workload
``primitives``     the atomic and locking primitives the matchers are built on
``throughput``     messages per second on the 3-digit workload
``memory``         bytes held per subscription, and its growth
``rounds``         timed concurrent rounds, shared by the threaded experiments below
``scaling``        operations per second at growing thread counts (first article)
``lockfree``       insert:lookup rounds, lock-free vs locked (second article)
``contention``     CPU time per operation, one shared matcher vs one per thread
``sharing``        why sharing costs: shared vs own-built per thread, ablations, counters
``ownership``      one thread's lookups on a matcher it built vs one another thread built
``starvation``     one reader's lookups beside one writer
``level_width``    one write and one lookup under 1 to 110,000 sibling inboxes; one write
                  to a pattern of as many subscribers
``compare``        the matchers on a workload given as files (``compare`` command)
=================  =====================================================================
"""
