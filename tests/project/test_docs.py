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


def code_text() -> str:
    """Every text the project's behaviour comes from: code, workflows, configuration."""
    kinds = {".py", ".yml", ".toml"}
    parts = [p for top in ("artbot", "tests", "repros", ".github") for p in (REPO / top).rglob("*")]
    parts += [REPO / "Makefile", REPO / "action.yml", REPO / "pyproject.toml"]
    return "\n".join(
        p.read_text(encoding="utf-8") for p in parts if p.suffix in kinds or p.name == "Makefile"
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_constant_the_docs_name_exists(doc: Path) -> None:
    """A name such as `FIXED_IN_0_5_21` in the docs is one the code still has (CONTRIBUTING
    told contributors to edit two that were gone)."""
    code = code_text()
    names = set(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`", doc.read_text(encoding="utf-8")))
    assert sorted(n for n in names if n not in code) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_the_docs_run_with_python_m_has_a_main(doc: Path) -> None:
    """`python -m artbot.x` in the docs names a module that runs as a script."""
    for name in set(re.findall(r"python -m (artbot[\w.]*)", doc.read_text(encoding="utf-8"))):
        path = REPO / (name.replace(".", "/") + ".py")
        path = path if path.exists() else REPO / name.replace(".", "/") / "__main__.py"
        assert path.exists() and '__name__ == "__main__"' in path.read_text("utf-8"), name


def test_the_only_in_table_names_every_module_that_starts_arts_code() -> None:
    """The design's "only in" row for ART's code names every module outside verify/ that
    starts the confined process (design.md once said verify/ only; patchtest/ starts it too)."""
    design = DESIGN.read_text(encoding="utf-8")
    [row] = [ln for ln in design.splitlines() if ln.startswith("| ART's code |")]
    starters = {
        p.relative_to(REPO / "artbot").as_posix()
        for p in (REPO / "artbot").rglob("*.py")
        if "verify.apart import" in p.read_text(encoding="utf-8") and p.parts[-2] != "verify"
    }
    assert starters, "no module outside verify/ imports verify.apart: update this test"
    for module in starters:
        folder, _, name = module.rpartition("/")
        assert f"`artbot/{folder}/`" in row and f"`{name}`" in row, module
