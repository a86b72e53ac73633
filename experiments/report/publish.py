"""``python -m experiments publish --from DIR``: the one step that changes the committed
results: ``README.md``'s results table, ``paper/figures/*.png`` and ``paper/paper.md``.

Everything else writes below the results root (``make reproduce``: ``results/``, git-ignored),
so a checkout stays clean however often it is measured. ``publish`` refuses unless every run
the paper and the table would draw from is of publication size (``full``), and says which are
not; ``--allow-size`` lets a smaller size through on purpose (the README and the paper name
each run's size anyway). It needs a checkout: an installed package has no README or paper
to update.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from ..env import PROJECT_ROOT
from ..records import Record, build_order, latest_run, load
from ..text import count

__all__ = ["PUBLICATION_SIZE", "run_publish", "unpublishable"]

#: The size of the runs the committed results come from.
PUBLICATION_SIZE = "full"


def unpublishable(records: Iterable[Record], allowed: Iterable[str] = (PUBLICATION_SIZE,)
                  ) -> list[str]:
    """One line per (experiment, build) whose drawn run is of a size not in ``allowed``."""
    recs = list(records)
    ok_sizes = set(allowed)
    out = []
    for build in build_order(recs):
        for experiment in sorted({r["experiment"] for r in recs if r["build"] == build}):
            run_id = latest_run(recs, experiment, build)
            size = next((r.get("size") for r in recs if r["run_id"] == run_id
                         and r["experiment"] == experiment), None)
            if size not in ok_sizes:
                out.append(f"{experiment} on {build}: run {run_id} is of size {size!r}")
    return out


def _checkout() -> Path:
    root = PROJECT_ROOT
    missing = [p for p in ("pyproject.toml", "README.md", "paper/paper.template.md")
               if not (root / p).is_file()]
    if missing:
        raise SystemExit(f"error: publish updates a checkout's README.md and paper/, and "
                         f"{root} is not one (no {', '.join(missing)}); clone the repository "
                         "and run it there")
    return root


def run_publish(source: Path, allowed: Iterable[str] = (PUBLICATION_SIZE,),
                allow_missing: bool = False) -> list[Path]:
    """Check the runs' sizes and that every target has data, then redraw the committed
    figures, paper and README table."""
    from .charts import run_charts
    from .paper import run_paper
    from .summary import compute, update_readme

    root = _checkout()
    records = load(source)
    if not records:
        raise SystemExit(f"error: --from {source}: no result records (*.jsonl) found there")
    bad = unpublishable(records, allowed)
    if bad:
        raise SystemExit(
            f"error: --from {source}: the committed results come from {PUBLICATION_SIZE}-size "
            "runs only (make reproduce-full), and these are not:\n  " + "\n  ".join(bad)
            + "\n(--allow-size SIZE publishes them anyway, on purpose)")
    rows = compute(records)
    empty = [f"{r['label']} ({r['build']})" for r in rows if r.get("status") == "no data"]
    if empty and not allow_missing:
        raise SystemExit(
            f"error: --from {source}: {count(len(empty), 'target')} "
            f"{'has' if len(empty) == 1 else 'have'} no data there, and publishing "
            "would replace their committed rows with 'no data':\n  " + "\n  ".join(empty)
            + "\n(measure them, e.g. make reproduce-full on both builds, or --allow-missing)")
    figures = root / "paper" / "figures"
    written = run_charts(source, figures, ("png",))
    written.append(run_paper(source, root / "paper" / "paper.template.md",
                             root / "paper" / "paper.md"))
    readme = root / "README.md"
    update_readme(readme, rows, source)
    written.append(readme)
    print("published; review with git diff and commit", file=sys.stderr)
    return written
