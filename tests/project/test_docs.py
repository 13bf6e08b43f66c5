"""The docs cannot drift from the code: docs/design.md's module table names every module of the
package and nothing that is gone; every local link in the README, CONTRIBUTING.md and the design
resolves (file, and heading where one is named); the module table lives in the design only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "docs" / "design.md"
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", DESIGN]
ROW = re.compile(r"^\| `(artbot/[^`]+\.py)` \|", re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def modules() -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / "artbot").rglob("*.py")}


def table_rows(text: str) -> list[str]:
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    return ROW.findall(section)


def test_the_design_lists_every_module_once_and_none_that_is_gone() -> None:
    rows = table_rows(DESIGN.read_text(encoding="utf-8"))
    assert len(rows) == len(set(rows)), sorted(r for r in rows if rows.count(r) > 1)
    assert sorted(modules() - set(rows)) == [], "add these to docs/design.md's module table"
    assert sorted(set(rows) - modules()) == [], "these are gone: remove them from the table"


def test_the_module_table_lives_in_the_design_only() -> None:
    for doc in DOCS[:2]:
        assert ROW.findall(doc.read_text(encoding="utf-8")) == [], doc.name


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(m) for m in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_local_link_resolves(doc: Path) -> None:
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not ours to check offline
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        missing_heading = anchor and path.suffix == ".md" and anchor not in anchors(path)
        if not path.exists() or missing_heading:
            broken.append(target)
    assert broken == []


def test_slugs_are_githubs() -> None:
    assert slug("Claims, status and filing decisions") == "claims-status-and-filing-decisions"
    assert slug("Checking findings against ART's code") == "checking-findings-against-arts-code"
    assert slug("The `artbot` action") == "the-artbot-action"
