"""Rendered issue bodies: golden files, and what every body must contain."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.catalog import load_catalog
from artbot.cli import cli
from artbot.errors import BadInput
from artbot.marker import IssueMarker, owned_region
from artbot.render import GITHUB_BODY_LIMIT, permalink, render_issue
from tests.shipped import ALL_ITEMS, ISSUE_ITEMS

REPO = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDEN_ITEMS = ISSUE_ITEMS
TRACKING = 1111


def golden_text(item: int) -> str:
    """The rendered issue as the golden file holds it (no captured repro output: it varies)."""
    catalog = load_catalog(REPO)
    issue = render_issue(catalog, catalog.get(item), tracking_issue=TRACKING, commit="0" * 40)
    return f"# {issue.title}\n\nLabels: {', '.join(issue.labels)}\n\n{issue.body}"


def golden_checklist() -> str:
    """The tracking issue's block once items 4-11 are filed as #1112-#1119, with the
    recorded status (findings/status/) ticking what is fixed."""
    from artbot.apply import status_views
    from artbot.models import ObservedIssue
    from artbot.plan import checklist_entries
    from artbot.render import render_checklist

    catalog = load_catalog(REPO)
    observed = []
    for n, item in enumerate(GOLDEN_ITEMS, start=1112):
        body = render_issue(catalog, catalog.get(item), tracking_issue=TRACKING).body
        marker = IssueMarker.find(body)
        observed.append(ObservedIssue(n, "t", body, "open", None, "", (), marker))
    views = status_views(catalog, catalog.findings)
    entries = checklist_entries(catalog.findings, observed, catalog.audit, None, views)
    return render_checklist(entries, catalog.audit, REPO / "templates")


def test_golden_checklist() -> None:
    expected = (GOLDEN_DIR / "checklist.md").read_text(encoding="utf-8")
    assert golden_checklist() == expected, "rendering changed: run `make golden` and review"


def clauses(body: str) -> list[str]:
    """Clauses of six words or more, outside code blocks and hidden markers, normalised."""
    out: list[str] = []
    fence = False
    for line in body.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        if fence or line.startswith("<!--"):
            continue
        cells = line.strip().strip("|").split("|") if line.startswith("|") else [line]
        for cell in cells:
            for part in re.split(r"(?<=[.!?;,:])\s+", re.sub(r"[*_`]", "", cell)):
                text = " ".join(part.split()).strip(" .,;:—-").casefold()
                if len(text.split()) >= 6:
                    out.append(text)
    return out


@pytest.mark.parametrize("item", GOLDEN_ITEMS)
def test_an_issue_says_each_thing_once_and_fits_in_two_minutes(item: int) -> None:
    """#10: at most 12,000 characters, a title of at most 90, no clause said twice (the
    summary does not repeat Actual/Effect, the status paragraph does not repeat its table)."""
    from artbot.reprorun import load_result
    from artbot.status import load_status

    catalog = load_catalog(REPO)
    issue = render_issue(
        catalog,
        catalog.get(item),
        tracking_issue=TRACKING,
        repro_result=load_result(REPO, item),
        status=load_status(REPO, item),
    )
    assert len(issue.body) <= 12_000 and len(issue.title) <= 90
    seen = Counter(clauses(issue.body))
    assert [c for c, n in seen.items() if n > 1] == []
    assert "_common" not in issue.body and "def measure" not in issue.body


@pytest.mark.parametrize("item", GOLDEN_ITEMS)
def test_every_field_that_is_artbots_says_so(item: int) -> None:
    catalog = load_catalog(REPO)
    finding = catalog.get(item)
    body = render_issue(catalog, finding, tracking_issue=TRACKING).body
    assert body.count("artbot's addition") == len(finding.additions)
    assert "Added by artbot's reproduction" in body or not finding.reproduction_notes
    assert "(the audit's)" in body  # the suggested fix and the confidence are quoted


@pytest.mark.parametrize("item", GOLDEN_ITEMS)
def test_golden(item: int) -> None:
    expected = (GOLDEN_DIR / f"issue-{item:02d}.md").read_text(encoding="utf-8")
    assert golden_text(item) == expected, "rendering changed: run `make golden` and review"


@pytest.mark.parametrize("item", ALL_ITEMS)
def test_every_body_has_what_a_reviewer_needs(item: int) -> None:
    catalog = load_catalog(REPO)
    finding = catalog.get(item)
    issue = render_issue(catalog, finding, tracking_issue=TRACKING)
    body = issue.body
    for loc in finding.locations:
        link = permalink(catalog.audit, loc)
        assert link.startswith("https://github.com/OpenPipe/ART/blob/e2a406a48/src/art/")
        lines = f"#L{loc.start}" if loc.start == loc.end else f"#L{loc.start}-L{loc.end}"
        assert link.endswith(lines)
        assert link in body
    assert " ".join(finding.expected.split()) in " ".join(body.split())
    assert IssueMarker.find(body) == IssueMarker("e2a406a48", item)
    assert f"python {finding.repro}" in body
    assert finding.repro in body
    for path in catalog.helpers(finding.repro):
        assert catalog.sources[path].strip() not in body  # no helper module is pasted
    minimal = REPO / f"repros/minimal/item{item:02d}.py"
    if minimal.is_file():
        assert f"```python\n{minimal.read_text(encoding='utf-8').strip()}\n```" in body
    assert f"#{TRACKING}" in body
    assert owned_region(body) is not None
    assert len(body) <= GITHUB_BODY_LIMIT


def test_permalink_format() -> None:
    catalog = load_catalog(REPO)
    loc = catalog.get(7).locations[0]
    assert permalink(catalog.audit, loc) == (
        "https://github.com/OpenPipe/ART/blob/e2a406a48/src/art/loss.py#L375-L385"
    )


def test_body_over_limit_is_bad_input(tmp_path: Path) -> None:
    catalog = load_catalog(REPO)
    finding = catalog.get(7).model_copy(update={"what": "x" * (GITHUB_BODY_LIMIT + 1)})
    with pytest.raises(BadInput, match="GitHub's limit is 65,536"):
        render_issue(catalog, finding)


def test_strict_undefined(tmp_path: Path) -> None:
    (tmp_path / "issue_title.md.j2").write_text("{{ finding.nope }}")
    (tmp_path / "issue_body.md.j2").write_text("x")
    catalog = load_catalog(REPO)
    with pytest.raises(BadInput, match="UndefinedError"):
        render_issue(catalog, catalog.get(7), templates_dir=tmp_path)


def test_render_cli(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--root", str(REPO), "render", "--item", "7"])
    assert result.exit_code == 0, result.output
    assert "src/art/loss.py#L375-L385" in result.output
    result = CliRunner().invoke(
        cli, ["--root", str(REPO), "render", "--all", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{i:02d}.md" for i in ALL_ITEMS]


def test_list_json() -> None:
    import json

    result = CliRunner().invoke(cli, ["--root", str(REPO), "list", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert [r["item"] for r in rows] == list(ALL_ITEMS)
    assert [r["issue"] for r in rows[:3]] == [1108, 1109, 1110]
    assert all(r["issue"] is None for r in rows[3:])


def test_artbots_evidence_figures_are_ones_its_repro_printed() -> None:
    """Side-by-side figures (Evidence.artbot) come from the captured run, never typed in:
    each appears in findings/results/NN.json within its displayed rounding (or as a fraction
    where the record shows a percentage)."""
    from artbot.reprorun import load_result

    catalog = load_catalog(REPO)
    checked = 0
    for finding in catalog.findings:
        shown = [e.artbot for e in finding.evidence if e.artbot]
        if not shown:
            continue
        result = load_result(REPO, finding.item)
        assert result is not None, f"item {finding.item}: no captured output"
        number = r"[-+]?\d*\.?\d+(?:e[-+]?\d+)?"
        printed = [float(x) for x in re.findall(number, str(result["stdout"]))]
        for text in shown:
            value = float(re.search(number, text.replace(" ", "")).group())  # type: ignore[union-attr]
            scale = 100 if "%" in text else 1
            close = [p for p in printed if abs(p * scale - value) <= 0.02 * abs(value)]
            assert close, f"item {finding.item}: {text!r} is not in the captured output"
            checked += 1
    assert checked >= 7
