"""The catalog loader: the shipped records validate; every bad-input class gives its exact line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.errors import CatalogInvalid
from artbot.records.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"
FINDING = "findings/07-tis.yaml"


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


def test_shipped_catalog_validates() -> None:
    catalog = load_catalog(REPO)
    # One record per findings/NN-*.yaml file, in item order.
    numbers = sorted(int(p.name[:2]) for p in (REPO / "findings").glob("[0-9][0-9]-*.yaml"))
    assert [f.item for f in catalog.findings if not f.is_follow_up] == numbers
    # artbot's own follow-ups, one per findings/followup-NNNN-*.yaml, numbered 100 x item + n.
    follow_ups = sorted(
        int(p.name.split("-")[1]) for p in (REPO / "findings").glob("followup-*.yaml")
    )
    assert [f.item for f in catalog.findings if f.is_follow_up] == follow_ups
    assert all(
        f.follows == f.item // 100 and f.origin == "artbot"
        for f in catalog.findings
        if f.is_follow_up
    )
    assert {f.item: f.issue for f in catalog.findings if f.issue} == {1: 1108, 2: 1109, 3: 1110}
    assert all(f.issue is None for f in catalog.findings if f.item >= 4)
    assert catalog.items == sorted(catalog.items)
    assert all(f.expected.strip() for f in catalog.findings)
    assert catalog.audit.commit == "e2a406a48"


def test_mini_fixture_validates(mini: Path) -> None:
    catalog = load_catalog(mini)
    assert catalog.items == [7]
    assert catalog.get(7).locations[0].lines == (375, 385)


# (edit to the fixture, the exact problem line it must produce)
BAD_INPUTS = [
    pytest.param(
        ("  level: plausible", "  level: certain"),
        "findings/07-tis.yaml:15: confidence.level: Input should be 'confirmed', 'plausible' or "
        "'speculative'",
        id="bad-enum",
    ),
    pytest.param(
        ("effect: Biased RL weighting.", "effect: Biased RL weighting.\nseverity: high"),
        "findings/07-tis.yaml:13: severity: unknown field",
        id="unknown-key",
    ),
    pytest.param(
        ("expected: Without original_logprobs, TIS applies no weight.\n", ""),
        "findings/07-tis.yaml:1: expected: required field is missing",
        id="missing-field",
    ),
    pytest.param(
        ("expected: Without original_logprobs, TIS applies no weight.", 'expected: "  "'),
        "findings/07-tis.yaml:13: expected: must not be empty",
        id="empty-field",
    ),
    pytest.param(
        ("lines: [375, 385]", "lines: [385, 375]"),
        "findings/07-tis.yaml:7: locations[0].lines: line range is inverted: 385-375",
        id="inverted-range",
    ),
    pytest.param(
        ("lines: [375, 385]", "lines: [0, 385]"),
        "findings/07-tis.yaml:7: locations[0].lines: line numbers must be positive, got 0-385",
        id="non-positive-range",
    ),
    pytest.param(
        ("repro: repros/item07.py", "repro: repros/missing.py"),
        "findings/07-tis.yaml:22: repro: repros/missing.py does not exist",
        id="missing-repro",
    ),
    pytest.param(
        ("path: src/art/loss.py", "path: tests/loss.py"),
        "findings/07-tis.yaml:6: locations[0].path: tests/loss.py is outside the audited source "
        "root src/art/",
        id="outside-source-root",
    ),
    pytest.param(
        ("affects: [Megatron]", "affects: [Megatron"),
        "findings/07-tis.yaml:5: YAML syntax error: column 10: expected ',' or ']', but got ':'",
        id="yaml-syntax",
    ),
    pytest.param(
        ("what: The loss", "what: first\nwhat: The loss"),
        "findings/07-tis.yaml:10: what: key appears more than once",
        id="duplicate-key",
    ),
]


@pytest.mark.parametrize(("change", "expected"), BAD_INPUTS)
def test_bad_input_is_reported_with_its_line(
    mini: Path, change: tuple[str, str], expected: str
) -> None:
    edit(mini, *change)
    with pytest.raises(CatalogInvalid) as info:
        load_catalog(mini)
    assert expected in [str(p) for p in info.value.problems]

    result = CliRunner().invoke(cli, ["--root", str(mini), "validate"])
    assert result.exit_code == 2
    assert expected in result.stderr.splitlines()
    assert "Traceback" not in result.output + result.stderr


def test_duplicate_item_across_files(mini: Path) -> None:
    shutil.copy(mini / FINDING, mini / "findings/08-copy.yaml")
    with pytest.raises(CatalogInvalid) as info:
        load_catalog(mini)
    assert [str(p) for p in info.value.problems] == [
        "findings/08-copy.yaml:1: item: item 7 is already defined in findings/07-tis.yaml"
    ]


def test_every_problem_is_reported_in_one_run(mini: Path) -> None:
    edit(mini, "  level: plausible", "  level: certain")
    edit(mini, "repro: repros/item07.py", "repro: repros/missing.py")
    edit(mini, "commit: e2a406a48", "commit: HEAD", path="findings/audit.yaml")
    with pytest.raises(CatalogInvalid) as info:
        load_catalog(mini)
    fields = sorted(p.field for p in info.value.problems)
    assert fields == ["commit", "confidence.level"]  # repro checks need a valid record first


def test_actions_annotations(mini: Path) -> None:
    edit(mini, "  level: plausible", "  level: certain")
    result = CliRunner(env={"GITHUB_ACTIONS": "true"}).invoke(
        cli, ["--root", str(mini), "validate"]
    )
    assert result.exit_code == 2
    assert (
        "::error file=findings/07-tis.yaml,line=15::confidence.level: Input should be 'confirmed', "
        "'plausible' or 'speculative'" in result.stdout.splitlines()
    )


def test_unknown_item_is_bad_input(mini: Path) -> None:
    result = CliRunner().invoke(cli, ["--root", str(mini), "render", "--item", "99"])
    assert result.exit_code == 2
    assert "no finding with item 99 (known: 7)" in result.stderr


def test_a_label_without_a_definition_is_a_located_problem(tmp_path: Path) -> None:
    """With label_definitions in audit.yaml, every label a finding uses must be defined."""
    import shutil

    root = tmp_path / "cat"
    shutil.copytree(REPO / "findings", root / "findings")
    shutil.copytree(REPO / "repros", root / "repros")
    path = root / "findings" / "06-adam-eps.yaml"
    path.write_text(path.read_text().replace("  - backend:trainer-rank\n", "  - backend:nope\n"))
    with pytest.raises(CatalogInvalid) as info:
        load_catalog(root)
    [problem] = [str(p) for p in info.value.problems]
    assert problem.startswith("findings/06-adam-eps.yaml:") and "'backend:nope'" in problem


def _node_rows(node: object) -> list[tuple[object, ...]]:
    """Each node of a composed document as (kind, tag, start, end, value), depth first."""
    import yaml

    rows: list[tuple[object, ...]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        assert isinstance(n, yaml.Node)
        start, end = (n.start_mark.line, n.start_mark.column), (n.end_mark.line, n.end_mark.column)
        value = n.value if isinstance(n, yaml.ScalarNode) else None
        rows.append((type(n).__name__, n.tag, start, end, value))
        if isinstance(n, yaml.MappingNode):
            stack += [x for pair in reversed(n.value) for x in reversed(pair)]
        elif isinstance(n, yaml.SequenceNode):
            stack += list(reversed(n.value))
    return rows


@pytest.mark.parametrize(
    "path", sorted(p.name for p in (REPO / "findings").glob("*.yaml")), ids=str
)
def test_the_fast_loader_reads_each_record_as_the_pure_python_one_does(path: str) -> None:
    """Records are read with libyaml where PyYAML has it: the same nodes, tags and line and
    column marks as the pure-Python loader, which locates every reported problem."""
    import yaml

    from artbot.records.catalog import _FAST_LOADER

    text = (REPO / "findings" / path).read_text(encoding="utf-8")
    assert _FAST_LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    fast = _node_rows(yaml.compose(text, Loader=_FAST_LOADER))
    assert fast == _node_rows(yaml.compose(text, Loader=yaml.SafeLoader))
    assert len(fast) > 50
