"""The pipeline's command line as a ``spark-submit`` application.

``spark-submit [options] experiments/pipeline/submit.py COMMAND [arguments]`` runs
``python -m experiments.pipeline COMMAND [arguments]`` in the driver that ``spark-submit``
starts, with the master, archives and settings given to ``spark-submit`` (``route`` without
``--master`` takes ``spark-submit``'s). For example, with the environment that
``tools/pipeline_env.py`` packs::

    spark-submit --master spark://head:7077 --archives cstrie-env.tar.gz#env \\
        --conf spark.pyspark.python=./env/bin/python \\
        --conf spark.pyspark.driver.python=python3 \\
        experiments/pipeline/submit.py route --subscriptions ... --messages ... --out ...

``spark-submit`` exports ``spark.pyspark.python`` to the driver as ``PYSPARK_PYTHON``, so
here (unlike with ``python -m ...``) the setting is enough; ``spark.pyspark.driver.python``
is the interpreter of the driver itself (in client mode a local one, with this package and
pyspark importable: ``spark-submit`` puts its own pyspark on the driver's path). Where the
driver runs on the cluster (``--deploy-mode cluster`` on YARN or Kubernetes; Spark's
standalone master does not run Python drivers), it runs ``./env/bin/python`` too.

The package imported is the one this file belongs to when it lies in a checkout or an
installed package, else (this file shipped alone) the interpreter's own.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    # Run as a script, this file's folder is sys.path[0], where the pipeline's modules
    # (regex.py...) would stand in for top-level modules of the same names.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    root = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(root, "experiments", "pipeline", "cli.py")):
        sys.path.insert(0, root)
    from experiments.pipeline.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
