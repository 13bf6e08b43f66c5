"""Hardening (#12), the pure half: markers that can't be confused, and input validate rejects.

Each test is one attack case from the issue; the GitHub half is in
github/test_faults_and_redirects.py.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.errors import BadInput, CatalogInvalid
from artbot.records.catalog import load_catalog
from artbot.records.marker import (
    BODY_END,
    BODY_START,
    IssueMarker,
    owned_region,
    replace_owned_region,
)

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"
FINDING = "findings/07-tis.yaml"
MARKER = "<!-- artbot:finding audit=e2a406a48 item=7 -->"


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    return root


def edit(root: Path, old: str, new: str, path: str = FINDING) -> None:
    file = root / path
    text = file.read_text()
    assert old in text, f"fixture lacks {old!r}"
    file.write_text(text.replace(old, new, 1))


def region(text: str) -> str:
    return f"{BODY_START}\n{MARKER}\n{text}\n{BODY_END}"


def problems(root: Path) -> list[str]:
    with pytest.raises(CatalogInvalid) as info:
        load_catalog(root)
    return [str(p) for p in info.value.problems]


# -- item 2: markers found structurally ---------------------------------------------------


def test_quoted_end_marker_above_the_region_does_not_widen_or_duplicate_it() -> None:
    human = f"Note: artbot's region ends at `{BODY_END}`, don't edit above it.\n\n"
    body = human + region("old") + "\n"
    assert owned_region(body) == region("old")
    new = replace_owned_region(body, region("new"))
    assert new == human + region("new") + "\n"
    assert replace_owned_region(new, region("new")) == new


def test_human_text_quoting_both_markers_keeps_its_length_over_three_syncs() -> None:
    human = (
        f"Quoting artbot: `{BODY_START}` ... `{BODY_END}`\n\n"
        f"```\n{BODY_START}\n{MARKER}\ncopied\n{BODY_END}\n```\n\n"
    )
    after = f"\n> {BODY_END}\nand a closing remark\n"
    body = human + region("old") + after
    lengths = []
    for _ in range(3):
        body = replace_owned_region(body, region("new"))
        lengths.append(len(body))
    assert body == human + region("new") + after
    assert lengths[0] == lengths[1] == lengths[2]


def test_a_copied_marker_outside_a_region_is_not_ownership() -> None:
    assert IssueMarker.find(f"I copied this: {MARKER}\n") is None
    assert IssueMarker.find(f"{MARKER}\n") is None  # no region around it
    assert IssueMarker.find(region("x")) == IssueMarker("e2a406a48", 7)


def test_region_is_the_last_line_start_marker_and_its_end() -> None:
    orphan = f"{BODY_START}\nhuman text after an orphaned start\n"
    body = orphan + region("old") + "\nafter\n"
    assert owned_region(body) == region("old")
    assert replace_owned_region(body, region("new")) == orphan + region("new") + "\nafter\n"


# -- item 2: validate rejects text that would fail later ----------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            "summary: The TIS branch",
            f"summary: {BODY_END} The TIS branch",
            "findings/07-tis.yaml:3: summary: must not contain '<!-- artbot'",
            id="summary-with-end-marker",
        ),
        pytest.param(
            "  text: Skip TIS",
            "  text: <!-- artbot:checklist:start --> Skip TIS",
            "findings/07-tis.yaml:21: fix.text: must not contain '<!-- artbot'",
            id="nested-field-with-marker",
        ),
        pytest.param(
            "affects: [Megatron]",
            f'affects: [Megatron, "{MARKER}"]',
            "findings/07-tis.yaml:4: affects: must not contain '<!-- artbot'",
            id="list-item-with-marker",
        ),
        pytest.param(
            "title: Truncated importance sampling falls back to the policy ratio",
            'title: "Truncated importance sampling\\nfalls back"',
            "findings/07-tis.yaml:2: title: must be one line",
            id="title-with-newline",
        ),
        pytest.param(
            "title: Truncated importance sampling falls back to the policy ratio",
            "title: " + "x" * 257,
            "findings/07-tis.yaml:2: title: String should have at most 256 characters",
            id="title-too-long",
        ),
        pytest.param(
            "title: Truncated importance sampling falls back to the policy ratio",
            'title: "  "',
            "findings/07-tis.yaml:2: title: must not be empty",
            id="title-empty",
        ),
    ],
)
def test_validate_rejects_text_that_would_fail_at_github(
    mini: Path, old: str, new: str, expected: str
) -> None:
    edit(mini, old, new)
    assert expected in "\n".join(problems(mini))


def test_rendered_body_with_a_second_region_or_marker_is_refused() -> None:
    """Embedded text (a minimal repro, captured output) quoting a marker stops the run."""
    from artbot.render.issue import check_markers

    marker = IssueMarker("e2a406a48", 7)
    check_markers(region("ok") + "\n", marker, "x.yaml")
    for extra in (BODY_END, f"# {BODY_END}", MARKER, "<!-- artbot:checklist:start -->"):
        body = f"{BODY_START}\n{MARKER}\n{extra}\n{BODY_END}\n"
        with pytest.raises(BadInput, match="exactly one artbot region"):
            check_markers(body, marker, "x.yaml")


# -- item 5: hostile YAML ------------------------------------------------------------------


def billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_rejected_quickly(mini: Path) -> None:
    (mini / "findings" / "08-laughs.yaml").write_text(billion_laughs())
    started = time.monotonic()
    found = problems(mini)
    assert time.monotonic() - started < 5  # unbounded, this walk never finishes
    assert "findings/08-laughs.yaml:1: YAML aliases expand to more than 20,000 values" in found


def test_a_few_aliases_are_still_fine(mini: Path) -> None:
    edit(mini, "affects: [Megatron]", "affects: &a [Megatron]\nlabels: *a")
    assert load_catalog(mini).get(7).labels == ["Megatron"]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("item: " + "[" * 5000 + "]" * 5000 + "\n", id="flow"),
        pytest.param(
            "".join(f"{' ' * i}k{i}:\n" for i in range(200)) + " " * 200 + "x: 1\n", id="block"
        ),
    ],
)
def test_deep_nesting_is_one_located_problem(mini: Path, text: str) -> None:
    (mini / "findings" / "08-deep.yaml").write_text(text)
    found = [p for p in problems(mini) if p.startswith("findings/08-deep.yaml")]
    assert len(found) == 1 and "nested more than 64 levels deep" in found[0]


def test_complex_yaml_key_is_a_problem_not_a_crash(mini: Path) -> None:
    (mini / "findings" / "08-key.yaml").write_text("? [a, b]\n: 1\nitem: 8\n")
    assert any(p.startswith("findings/08-key.yaml") for p in problems(mini))


@pytest.mark.parametrize(
    "name",
    ["laughs", "deep"],
)
def test_validate_cli_exits_2_with_one_line_per_problem(mini: Path, name: str) -> None:
    text = billion_laughs() if name == "laughs" else "item: " + "[" * 5000 + "]" * 5000
    (mini / "findings" / f"08-{name}.yaml").write_text(text)
    result = CliRunner().invoke(cli, ["--root", str(mini), "validate"])
    assert result.exit_code == 2
    assert "internal error" not in result.output
    assert f"findings/08-{name}.yaml:1:" in result.output


@pytest.mark.parametrize(
    ("api_url", "path", "expected"),
    [
        ("http://host/api/v3", "/api/v3/repos/o/n/issues", "/repos/o/n/issues"),
        ("http://host/api/v3/", "/api/v3/repos/o/n/issues", "/repos/o/n/issues"),
        ("https://api.github.com", "/repos/o/n/issues", "/repos/o/n/issues"),
        ("http://host/api/v3", "/api/v3x/repos", "/api/v3x/repos"),
    ],
)
def test_enterprise_link_path_is_relative_to_the_api_root(
    api_url: str, path: str, expected: str
) -> None:
    """#12 item 6: page 2 on GitHub Enterprise is not requested as /api/v3/api/v3/..."""
    from artbot.github.client import relative_path

    assert relative_path(api_url, path) == expected
