"""The Spark pipeline: route a large message set through the package's matchers.

``python -m experiments.pipeline generate|route|aggregate`` (also mounted as ``python -m
experiments pipeline ...``); see ``README.md`` beside this file. Modules:

================  ==========================================================================
``cli``           the argument parser (``add_parser`` for the harness, ``main``)
``generate``      seeded Zipf workloads written as Parquet with numpy/pyarrow
``route``         the ``route`` command: its options, the checks before Spark, the run
``inputs``        which files an input is, their checks and row counts; the recorded dialect
``partitioning``  messages partitioned by topic; ``--salt`` spreads the hot topics
``routing``       per-partition routing: the pure Python core, the stream it produces
``adapters``      the core in Spark: mapInArrow/mapInPandas/RDD (``--impl``), the frame
``job``           the Spark job of ``route``: route, write and decode outputs, reconcile,
                  the summary's contents
``baseline``      the regex baseline (cross join + ``RLIKE``) beside the matcher, compared
``summary``       the summary's figures: stage timings, build info, fanout, task figures
``publish``       the staging folder beside ``--out``, the swap, ``_SUCCESS`` last
``workercache``   the matcher a Python worker keeps across tasks; builds; per-task figures
``matchers``      the matchers by name and how each is built per partition
``regex``         subscription patterns as regexes (the baseline)
``aggregate``     harness result records of many runs as summary tables
``sparkutil``     Java check, session, Hadoop file system access, the output folder's swap
``submit``        the command line as a ``spark-submit`` application
================  ==========================================================================

Importing the package imports neither pyspark, pyarrow nor pandas.
"""

__all__: list[str] = []
