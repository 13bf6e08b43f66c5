"""Rendered issue bodies: golden files, and what every body must contain."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.errors import BadInput
from artbot.records.catalog import load_catalog
from artbot.records.marker import IssueMarker, owned_region
from artbot.render.issue import GITHUB_BODY_LIMIT, permalink, render_template
from tests.helpers.golden import (
    GOLDEN_DIR,
    GOLDEN_ITEMS,
    REPO,
    TRACKING,
    golden_checklist,
    golden_text,
    render_issue,
)
from tests.helpers.shipped import ALL_ITEMS, ISSUE_ITEMS


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
    """#10, #38: at most 6 KB beside the repro's python blocks (#52; tests/render/test_budget.py:
    3 KB in view), a title of at most 90, no clause said twice (the summary does not repeat
    Actual/Effect, the status paragraph does not repeat its table)."""
    from artbot.repro.run import load_result
    from artbot.status import load_status

    catalog = load_catalog(REPO)
    issue = render_issue(
        catalog,
        catalog.get(item),
        tracking_issue=TRACKING,
        repro_result=load_result(REPO, item),
        status=load_status(REPO, item),
    )
    prose = re.sub(r"```python\n.*?\n```", "", issue.body, flags=re.S)
    assert len(prose.encode()) <= 6 * 1024 and len(issue.title) <= 90
    seen = Counter(clauses(issue.body))
    # A line to look for is data, spelled out at each place that has it (#38's review read
    # "look for the same line" as the line above's).
    assert [c for c, n in seen.items() if n > 1 and not c.startswith("look for ")] == []
    assert "_common" not in issue.body and "def measure" not in issue.body


@pytest.mark.parametrize("item", GOLDEN_ITEMS)
def test_every_field_that_is_artbots_says_so(item: int) -> None:
    catalog = load_catalog(REPO)
    finding = catalog.get(item)
    body = render_issue(catalog, finding, tracking_issue=TRACKING).body
    shown = {"expected"} | ({"effect"} if "effect" in finding.additions else set())
    assert body.count("artbot's addition") == len(set(finding.additions) & shown)
    if finding.is_follow_up:  # artbot's own: nothing in it is the audit's
        assert "(artbot's)" in body and "(the audit's)" not in body
        assert body.split("\n")[2].startswith("**artbot's own finding, not the audit's:**")
    else:
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
        ref = f"v{loc.located_in}" if loc.located_in else "e2a406a48"
        assert link.startswith(f"https://github.com/OpenPipe/ART/blob/{ref}/src/art/")
        lines = f"#L{loc.start}" if loc.start == loc.end else f"#L{loc.start}-L{loc.end}"
        assert link.endswith(f"{loc.path}{lines}")  # every link has its line anchor
        if loc.located_in is not None:  # a release's lines: at that release's tag
            assert f"/blob/v{loc.located_in}/" in link
            assert f"at v{loc.located_in}" in body
        assert link in body
    assert " ".join(finding.expected.split()) in " ".join(body.split())
    assert IssueMarker.find(body) == IssueMarker("e2a406a48", item)
    assert finding.repro in body
    for path in catalog.helpers(finding.repro):
        assert catalog.sources[path].strip() not in body  # no helper module is pasted
    # One repro, pasted whole (#52): a block calling ART's code, or a torch model of its lines.
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


@pytest.mark.parametrize("name", ["summary.md.j2", "close_comment.md.j2", "checklist.md.j2"])
def test_every_template_error_is_bad_input_in_one_line(name: str, tmp_path: Path) -> None:
    """Every template is rendered through render_template (the Action's summary, the closing
    comment and the checklist as the issue body): a broken one is one line, no traceback."""
    (tmp_path / name).write_text("{{ nope.nope }}")
    with pytest.raises(BadInput, match=r"^templates: UndefinedError: 'nope' is undefined$"):
        render_template(tmp_path, name)


def test_render_cli(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--root", str(REPO), "render", "--item", "7"])
    assert result.exit_code == 0, result.output
    assert "src/art/loss.py#L375-L385" in result.output
    result = CliRunner().invoke(
        cli, ["--root", str(REPO), "render", "--all", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{i:02d}.md" for i in ALL_ITEMS)


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
    from artbot.repro.run import load_result

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


# -- a renderer built once per run (#20.1) -------------------------------------------------


def test_rendering_opens_no_file_and_starts_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the catalog is loaded and the renderer built, every issue, the checklist and a
    status comment render with file opening and process creation disabled."""
    import builtins
    import io
    import os
    import subprocess

    from artbot.render.issue import Renderer, render_checklist, render_status_comment
    from artbot.repro.run import load_result
    from artbot.run.commands import status_views
    from artbot.run.plan import checklist_entries
    from artbot.status import load_status

    catalog = load_catalog(REPO)
    inputs = {
        f.item: (load_result(REPO, f.item), load_status(REPO, f.item)) for f in catalog.findings
    }
    views = status_views(catalog, catalog.findings)
    entries = checklist_entries(catalog.findings, [], catalog.audit, None, views)
    renderer = Renderer(catalog)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"rendering touched the system: {args[:1]!r}")

    for module, name in [
        (builtins, "open"),
        (io, "open"),
        (os, "open"),
        (os, "stat"),
        (os, "scandir"),
        (os, "listdir"),
        (os, "posix_spawn"),
        (os, "fork"),
        (subprocess, "Popen"),
    ]:
        monkeypatch.setattr(module, name, refuse)
    bodies = [
        renderer.issue(f, tracking_issue=TRACKING, repro_result=r, status=s).body
        for f in catalog.findings
        for r, s in [inputs[f.item]]
    ]
    checklist = render_checklist(entries, catalog.audit, REPO / "templates")
    view = views[7]
    comment = render_status_comment(view, "open", catalog.audit, REPO / "templates")
    monkeypatch.undo()
    assert len(bodies) == len(ALL_ITEMS) and all(IssueMarker.find(b) for b in bodies)
    assert "- [" in checklist and "artbot status" in comment


def test_templates_are_compiled_once_per_process() -> None:
    from artbot.render.issue import _compiled
    from artbot.run.commands import render_all

    catalog = load_catalog(REPO)
    render_all(catalog, catalog.findings, TRACKING)
    before = _compiled.cache_info()
    render_all(catalog, catalog.findings, TRACKING)
    after = _compiled.cache_info()
    assert after.misses == before.misses and after.hits > before.hits


# -- links to artbot's own repository (#22.7) ----------------------------------------------


@pytest.mark.parametrize("item", ALL_ITEMS)
def test_no_body_holds_a_placeholder_link(item: int) -> None:
    from artbot.status import load_status

    catalog = load_catalog(REPO)
    body = render_issue(catalog, catalog.get(item), status=load_status(REPO, item)).body
    assert "OWNER/" not in body


def test_the_full_script_links_to_the_tool_repository_at_its_commit() -> None:
    from dataclasses import replace

    from artbot.records.toolsource import ToolSource

    catalog = load_catalog(REPO)
    finding = catalog.get(7)
    sha = "1" * 40
    linked = replace(catalog, tool=ToolSource("someone/artbot", sha, "--tool-repository"))
    body = render_issue(linked, finding).body
    assert (
        f"[`{finding.repro}`](https://github.com/someone/artbot/blob/{sha}/{finding.repro})" in body
    )
    body = render_issue(replace(catalog, tool=ToolSource("someone/artbot", None)), finding).body
    assert "/someone/artbot/blob/main/" in body and "no commit was known" in body
    plain = render_issue(catalog, finding).body
    assert f"Full script: `{finding.repro}` in artbot's repository" in plain
    assert "/blob/" not in plain.split("Full script", 1)[1].split("\n", 1)[0]


def test_the_tool_repository_comes_from_the_flag_actions_or_the_remote(tmp_path: Path) -> None:
    import subprocess

    from artbot.records.toolsource import parse_remote, resolve_tool_source

    assert parse_remote("https://github.com/a-b/art.bot.git") == "a-b/art.bot"
    assert parse_remote("git@github.com:a/b.git") == "a/b"
    assert parse_remote("ssh://git@github.com/a/b") == "a/b"
    assert parse_remote("https://github.com/OWNER/artbot") is None
    assert parse_remote("/some/local/path") is None

    bare = tmp_path / "bare"
    bare.mkdir()
    assert resolve_tool_source(bare).repository is None
    flagged = resolve_tool_source(bare, flag="x/y", actions_repository="a/b", workspace=bare)
    assert (flagged.repository, flagged.origin) == ("x/y", "--tool-repository")
    assert resolve_tool_source(bare, actions_repository="a/b", workspace=bare).repository == "a/b"
    # An action's own folder is not the checkout of $GITHUB_REPOSITORY.
    elsewhere = tmp_path / "workspace"
    elsewhere.mkdir()
    assert (
        resolve_tool_source(bare, actions_repository="a/b", workspace=elsewhere).repository is None
    )
    with pytest.raises(BadInput, match="--tool-repository"):
        resolve_tool_source(bare, flag="OWNER/artbot")

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(bare)], check=True)
    subprocess.run([*git, "-C", str(bare), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(
        [*git, "-C", str(bare), "remote", "add", "origin", "git@github.com:someone/artbot.git"],
        check=True,
    )
    found = resolve_tool_source(bare)
    assert found.repository == "someone/artbot" and found.origin == "git remote origin"
    assert found.commit is not None and len(found.commit) == 40


def test_render_says_once_when_the_repository_is_not_known(tmp_path: Path) -> None:
    import shutil

    for part in ("findings", "repros", "templates"):
        shutil.copytree(REPO / part, tmp_path / part)
    env = {"GITHUB_ACTIONS": None, "GITHUB_REPOSITORY": None, "GITHUB_WORKSPACE": None}
    runner = CliRunner(env=env)
    out = tmp_path / "out"
    result = runner.invoke(cli, ["--root", str(tmp_path), "render", "--all", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("artbot's repository is not known") == 1
    assert "](https://" not in (out / "07.md").read_text(encoding="utf-8").split("Full script")[1]
    args = ["--root", str(tmp_path), "--tool-repository", "someone/artbot", "render", "--item", "7"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0 and "not known" not in result.stderr
    assert "https://github.com/someone/artbot/blob/main/repros/item07" in result.stdout


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        (
            "findings/audit.yaml",
            "tracking_label:",
            "tool_repository: OWNER/artbot\ntracking_label:",
        ),
        (
            "findings/07-tis-fallback.yaml",
            "summary: >-",
            "summary: >-\n  See OWNER/artbot for this.",
        ),
    ],
)
def test_validate_rejects_the_placeholder(tmp_path: Path, path: str, old: str, new: str) -> None:
    import shutil

    for part in ("findings", "repros"):
        shutil.copytree(REPO / part, tmp_path / part)
    target = tmp_path / path
    target.write_text(target.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "validate"])
    assert result.exit_code == 2, result.output
    assert path in result.output and "'OWNER/'" in result.output


@pytest.mark.parametrize("item", ALL_ITEMS)
def test_prose_holds_no_bare_dunder(item: int) -> None:
    """``__init__`` outside code renders as bold "init" on GitHub: prose names it in a code span."""
    from artbot.repro.run import load_result
    from artbot.status import load_status

    catalog = load_catalog(REPO)
    body = render_issue(
        catalog,
        catalog.get(item),
        tracking_issue=TRACKING,
        repro_result=load_result(REPO, item),
        status=load_status(REPO, item),
    ).body
    prose = re.sub(r"```.*?```", "", body, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    assert not re.search(r"(?<![\\\w])__\w+__", prose), re.search(r".{40}__\w+__.{40}", prose)


@pytest.mark.parametrize("item", ISSUE_ITEMS)
def test_every_issue_names_its_regression_test_and_the_command(item: int) -> None:
    """A test for ART's suite with the one command that runs it and what it reported on the
    newest release, or, where none can run on a CPU, why not."""
    import json

    catalog = load_catalog(REPO)
    finding = catalog.get(item)
    body = render_issue(catalog, finding, tracking_issue=TRACKING).body
    section = body.split("### Repro and test\n", 1)[1].split("<details>", 1)[0]
    path = catalog.regression.get(item)
    if path is None:
        assert finding.no_regression_test, f"item {item}: a regression test, or why none"
        assert "**Test:** none for ART's suite yet: " in section
        return
    name = path.rsplit("/", 1)[-1]
    outcomes = json.loads((REPO / "repros" / "regression" / "outcomes.json").read_text())
    reported = f"`pytest tests/unit/{name}` on openpipe-art {outcomes['release']}: "
    assert f"{reported}`{outcomes['outcomes'][name]}`" in section


def test_artbots_disagreement_states_figures_its_repro_printed() -> None:
    """#38: where artbot contradicts the audit, it says so first, with figures its own captured
    run printed (findings/results/NN.json), never typed in: each decimal figure appears there
    within its displayed rounding (as a fraction where the text gives a percentage)."""
    from artbot.repro.run import load_result

    catalog = load_catalog(REPO)
    number = r"\d+\.\d+"
    checked = 0
    for finding in catalog.findings:
        if not finding.disagreement:
            continue
        result = load_result(REPO, finding.item)
        assert result is not None, f"item {finding.item}: no captured output"
        printed = [abs(float(x)) for x in re.findall(number, str(result["stdout"]))]
        for m in re.finditer(rf"({number})(?: ± ({number}))?( ?%)?", finding.disagreement):
            scale = 100 if m.group(3) else 1
            for value in (float(v) for v in m.group(1, 2) if v):
                assert any(abs(p * scale - value) <= 0.05 * value for p in printed), (
                    finding.item,
                    m.group(),
                )
                checked += 1
    assert checked >= 4
