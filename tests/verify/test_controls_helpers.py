"""The pieces the controls and the source-reading checks stand on: tests/helpers/controls.py's
linked copy, and repros/_source.py's statement-by-statement ``ast`` reading of 3.12 files."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from artbot.records.catalog import load_catalog
from artbot.verify.code import checkable
from tests.helpers.controls import (
    ROOT,
    BadControl,
    ControlDoesNotApply,
    controlled_copy,
    load_control,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "repros"))
import _source  # noqa: E402

# 3.12 syntax (a type statement) that Python 3.11 cannot parse as a whole file.
MODULE = """\
type Selection = str | None


class AdamParams:
    learning_rate: float
    beta1: float = 0.9


class Trainer:
    def build(
        self,
        params: AdamParams,
    ) -> None:
        optimizer = torch.optim.AdamW(
            masters,
            betas=(params.beta1, 0.99),
            weight_decay=0.1,
        )
        if bad:
            raise RuntimeError("AdamParams differ across ranks")
"""


def test_the_module_does_not_parse_whole_on_this_python() -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("this Python parses 3.12 syntax")
    with pytest.raises(SyntaxError):
        ast.parse(MODULE)


def test_a_call_is_parsed_whole_not_cut_at_the_first_parenthesis() -> None:
    line = _source.lines_with(MODULE, "AdamW(")[0]
    stmt = _source.statement_at(MODULE, line)
    assert (stmt.line, stmt.end) == (line, line + 4)
    call = stmt.node.value  # type: ignore[attr-defined]
    assert [k.arg for k in call.keywords] == ["betas", "weight_decay"]


def test_class_and_enclosing_def() -> None:
    params = _source.class_named(MODULE, "AdamParams")
    assert [s.target.id for s in params.node.body] == ["learning_rate", "beta1"]  # type: ignore[attr-defined]
    guard = _source.enclosing_def(MODULE, _source.lines_with(MODULE, "differ across ranks")[0])
    assert isinstance(guard.node, ast.FunctionDef) and guard.node.name == "build"
    assert guard.end == len(MODULE.splitlines())


def _release(tmp_path: Path) -> Path:
    root = tmp_path / "release"
    (root / "art" / "sub").mkdir(parents=True)
    (root / "art" / "a.py").write_text("x = 1\ny = 2\n")
    (root / "art" / "sub" / "b.py").write_text("z = 3\n")
    return root


def test_controlled_copy_edits_a_copy_and_never_the_release(tmp_path: Path) -> None:
    release = _release(tmp_path)
    copy = controlled_copy(release, tmp_path / "copy", [("*.py", r"^y = 2$", "y = 20")])
    assert (release / "art" / "a.py").read_text() == "x = 1\ny = 2\n"
    assert (copy / "art" / "a.py").read_text() == "x = 1\ny = 20\n"
    assert not (copy / "art" / "a.py").is_symlink()
    # What the edits do not reach links to the release: here the whole of art/sub/.
    assert (copy / "art" / "sub").is_symlink() and (copy / "art" / "sub" / "b.py").is_file()
    assert not (copy / "art").is_symlink()


def test_a_controlled_copy_links_only_what_its_edits_do_not_reach(tmp_path: Path) -> None:
    release = _release(tmp_path)
    (release / "art" / "sub" / "c.py").write_text("y = 2\n")
    (release / "art" / "other").mkdir()
    (release / "art" / "other" / "d.py").write_text("y = 2\n")
    edits = [("sub/*.py", r"^y = 2$", "y = 3"), ("sub/c.py", r"^y = 3$", "y = 4")]
    copy = controlled_copy(release, tmp_path / "copy", edits)
    art = copy / "art"
    assert (art / "sub" / "c.py").read_text() == "y = 4\n"  # the second edit sees the first's
    assert not (art / "sub").is_symlink() and not (art / "sub" / "c.py").is_symlink()
    assert (art / "sub" / "b.py").is_symlink() and (art / "other").is_symlink()
    assert (art / "a.py").is_symlink() and (art / "other" / "d.py").read_text() == "y = 2\n"
    assert sorted(p.name for p in art.iterdir()) == ["a.py", "other", "sub"]
    assert (release / "art" / "sub" / "c.py").read_text() == "y = 2\n"


def test_an_edit_that_matches_nothing_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(ControlDoesNotApply, match="matches nothing"):
        controlled_copy(_release(tmp_path), tmp_path / "copy", [("*.py", r"^w = ", "")])


WHY = "why = '''\nartbot's control.\n'''\n"
FIX = '[[fix]]\nfiles = "loss.py"\nfind = \'a\\(\'\nreplace = "b"\n'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(FIX, "why: missing", id="missing-why"),
        pytest.param(WHY + FIX.replace("fix", "fixes"), "fixes: unknown key", id="unknown-key"),
        pytest.param(WHY + FIX + 'release = ["0.5.23"]\n', "fix[1]: a table of exactly", id="typo"),
        pytest.param(WHY + FIX + "releases = []\n", "fix[1].releases: a non-empty", id="empty"),
        pytest.param(WHY + FIX.replace("a\\(", "a("), "fix[1].find: not a regular", id="regex"),
        pytest.param(WHY + "fix = 1\n", "fix: a non-empty array", id="not-tables"),
    ],
)
def test_a_malformed_item_control_is_named_with_its_key(
    text: str, error: str, tmp_path: Path
) -> None:
    (tmp_path / "item07.toml").write_text(text, encoding="utf-8")
    with pytest.raises(BadControl, match=re.escape(f"{tmp_path / 'item07.toml'}: {error}")):
        load_control(7, tmp_path)


def test_an_edit_names_its_releases_or_applies_to_every_release(tmp_path: Path) -> None:
    text = WHY + FIX + 'releases = ["0.5.20"]\n' + FIX.replace('"b"', '"c"')
    (tmp_path / "item07.toml").write_text(text, encoding="utf-8")
    control = load_control(7, tmp_path)
    assert control is not None and control.doc == "artbot's control."
    assert control.edits("fix", "0.5.20") == [("loss.py", r"a\(", "b"), ("loss.py", r"a\(", "c")]
    assert control.edits("fix", "0.5.23") == [("loss.py", r"a\(", "c")]
    assert control.edits("unfix", "0.5.23") == []


def test_every_control_names_whose_fix_it_applies() -> None:
    for finding in checkable(load_catalog(ROOT)):
        if finding.is_follow_up:
            continue  # artbot's own follow-ups: their checks are proven on the releases alone
        item = finding.item
        control = load_control(item)
        assert control is not None and control.doc, item
        assert any(word in control.doc for word in ("the audit's", "0.5.21's", "artbot's")), item
