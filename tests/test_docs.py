"""The documentation a stranger reads holds: it points at no file outside the repository,
and what it says ``make reproduce`` runs is what the Makefile runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", ROOT / "examples" / "README.md",
               *(ROOT / "docs").glob("*.md")])


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_point_at_nothing_outside_the_repository(doc):
    """Links must lead to files of the repository; a quoted path must not climb out of it
    (``results/...`` quoted as what a command writes need not exist)."""
    text = doc.read_text()
    links = [t for t in re.findall(r"\]\(([^)#\s]+)", text) if not re.match(r"[a-z]+:", t)]
    quoted = [t for t in re.findall(r"`([^`\s]+)`", text) if t.startswith("../")]
    for target in links + quoted:
        path = (doc.parent / target).resolve()
        assert path.is_relative_to(ROOT), f"{doc.name} points outside the repository: {target}"
        assert path.exists(), f"{doc.name} points at {target}, which is not in the repository"


def _make_variables(makefile: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Z_]+)\s*[:?]?=\s*(\S+)\s*$", makefile, re.M))


def test_the_readme_says_what_make_reproduce_runs():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nreproduce:", 1)[1].split("\n\n", 1)[0]
    line = next(x.strip() for x in recipe.splitlines() if "-m experiments all" in x)
    variables = _make_variables(makefile)
    for _ in range(3):  # $(VPY) is $(VENV)/bin/python
        line = re.sub(r"\$\((\w+)\)", lambda m: variables[m.group(1)], line)
    said = re.search(r"`make reproduce` runs `([^`]+)`", (ROOT / "README.md").read_text())
    assert said, "the README does not say what make reproduce runs"
    assert said.group(1) == line, f"README: {said.group(1)!r}; Makefile: {line!r}"
