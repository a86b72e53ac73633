"""Reporting: figures, tables, the summary and the paper, from result records only
(nothing here measures; matplotlib is imported by the figures alone).

====================  ==================================================================
``plotting``          what every figure shares: colours, labels, runs, error bars
``charts``            the figures of the single-thread experiments, and ``run_charts``
``charts_threads``    the figures of the threaded experiments
``summary``           the target ratios, met or missed (also the README's table)
``tables``            the paper's single-thread tables and the formatting they share
``tables_threads``    the paper's tables of the threaded experiments
``sharing``           the sharing experiment's tables, facts and many-core model
``paper``             ``paper/paper.template.md`` filled from the records
``compare``           the ``compare`` command's terminal table and chart
====================  ==================================================================
"""
