"""#51: every fix an issue suggests is a control, and `artbot test` (the real command) judges it
fixed on the newest release.

A suggested fix is the ``[[fix]]`` of ``repros/controls/itemNN.toml`` or an
``itemNN_suggested_<what>.toml`` beside it (``repros/controls/README.md``). Each one that has
edits for the newest release is applied to a copy of that release, written as the unified diff a
maintainer would paste, and run through ``artbot test --item N --patch``: it must exit 0 with
"fixed", or the issue stops suggesting it. A suggestion file quotes the issue's words for it
(``suggestion``), found in the item's record, so a control cannot outlive the suggestion.

And the same fix spelled differently gets the same verdict: every name a suggested fix
introduces (a field, a buffer, a helper), renamed throughout the patched files, must leave the
check's verdict fixed, unless the contract names it (item 5's first suggestion was judged by its
staging buffer's name).

Each ``artbot test`` case runs the item's check and regression test twice, confined (3-26 s
measured here); a respelled fix runs the check once.
"""

from __future__ import annotations

import fnmatch
import io
import keyword
import os
import re
import tokenize
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.records.catalog import load_catalog
from artbot.verify.code import CodeStatus, checkable
from tests.helpers.controls import (
    ADVERSARIAL,
    CONTROLS,
    BadControl,
    Suggested,
    check,
    claim_verdicts,
    controlled_copy,
    load_adversarial,
    load_suggested,
    recorded,
    suggested_fixes,
)
from tests.helpers.patchdiff import RELEASE, make_diff
from tests.helpers.wheels import default_wheels

REPO = Path(__file__).resolve().parents[2]
NO_TOKEN = {k: v for k, v in os.environ.items() if "TOKEN" not in k.upper()}
CATALOG = load_catalog(REPO)
CHECKED = {f.item for f in checkable(CATALOG)}


def _on_newest() -> list[Suggested]:
    return [s for s in suggested_fixes() if s.edits(RELEASE) and s.item in CHECKED]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def as_diff(release_root: Path, patched: Path) -> str:
    """The files a control wrote in ``patched`` (its edited files are real files; the rest are
    links to the release) as ``git diff`` prints them in ART's repository."""
    out = []
    for path in sorted((patched / "art").rglob("*.py")):
        if path.is_symlink() or any(p.is_symlink() for p in path.parents):
            continue
        rel = path.relative_to(patched)
        old = (release_root / rel).read_text(encoding="utf-8")
        new = path.read_text(encoding="utf-8")
        if old != new:
            out.append(make_diff(f"src/{rel.as_posix()}", old, new))
    return "".join(out)


@pytest.mark.network
@pytest.mark.parametrize("suggested", _on_newest(), ids=lambda s: s.name)
def test_artbot_test_judges_every_suggested_fix_fixed(suggested: Suggested, tmp_path: Path) -> None:
    release_root = default_wheels().tree(RELEASE)
    patched = controlled_copy(release_root, tmp_path / "patched", suggested.edits(RELEASE))
    diff = tmp_path / f"{suggested.name}.diff"
    diff.write_text(as_diff(release_root, patched), encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        ["--root", str(REPO), "test", "--item", str(suggested.item), "--patch", str(diff)],
        env=NO_TOKEN,
    )
    assert result.exit_code == 0 and ": fixed" in result.output, (
        f"{suggested.name}: the issue suggests this fix, and `artbot test` does not judge it "
        f"fixed on {RELEASE}:\n{result.output}"
    )


def test_every_item_open_on_the_newest_release_suggests_a_fix_that_is_tested() -> None:
    """An item whose check finds it open on the newest release ships at least one suggested fix
    with edits for it (or the test above would have nothing to run)."""
    from artbot.status import load_status

    tested = {s.item for s in _on_newest()}
    for item in sorted(CHECKED):
        status = load_status(REPO, item)
        point = None if status is None else status.releases()[-1]
        still_open = point is None or any(
            c.verdict.value == "reproduced" for c in point.claims.values()
        )
        if still_open:
            assert item in tested, f"item {item} is open on {RELEASE} but no fix is tested"


@pytest.mark.parametrize(
    "path", sorted(CONTROLS.glob("item*_suggested_*.toml")), ids=lambda p: p.stem
)
def test_a_suggestion_control_quotes_its_records_suggestion(path: Path) -> None:
    suggested = load_suggested(path)
    record = CATALOG.root / CATALOG.files[suggested.item]
    said = _norm(record.read_text(encoding="utf-8"))
    assert suggested.suggestion is not None and _norm(suggested.suggestion) in said, (
        f"{path.name}: its suggestion is not in {record.name}: the issue no longer suggests it"
    )


def test_a_suggestion_control_is_validated(tmp_path: Path) -> None:
    wrong = tmp_path / "item06_suggested_x.toml"
    wrong.write_text('why = "w"\n[[fix]]\nfiles = "a.py"\nfind = "x"\nreplace = "y"\n')
    with pytest.raises(BadControl, match="suggestion: missing"):
        load_suggested(wrong)
    misnamed = tmp_path / "item06_fix.toml"
    misnamed.write_text(wrong.read_text() + 'suggestion = "s"\n')
    with pytest.raises(BadControl, match="not named"):
        load_suggested(misnamed)


def _names_defined(source: str) -> set[str]:
    """Names ``source`` defines, read from its tokens (ART's files use Python 3.12 syntax that
    an older ``ast`` cannot parse): after ``def`` or ``class``; a name or ``.attribute``
    assigned or annotated outside brackets (``x = ``, ``self.x = ``, ``x: float = ``)."""
    tokens = [t for t in _tokens(source) if t.type not in (tokenize.COMMENT, tokenize.NL)]
    found, depth = set(), 0
    for n, tok in enumerate(tokens[:-1]):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        if tok.type != tokenize.NAME:
            continue
        before = tokens[n - 1].string if n else ""
        after = tokens[n + 1].string
        if before in ("def", "class") or (
            depth == 0 and after in ("=", ":") and before != "lambda"
        ):
            found.add(tok.string)
    return found


def introduced(original: str, fixed: str) -> set[str]:
    """The names ``fixed`` defines that are no token of ``original``."""
    before = {t.string for t in _tokens(original) if t.type == tokenize.NAME}
    return _names_defined(fixed) - before - set(keyword.kwlist)


def respelled(fixed: str, local: set[str], fields: set[str], suffix: str = "_respelled") -> str:
    """``fixed`` with the names its fix introduced renamed: ``local`` (this file's) everywhere,
    ``fields`` (introduced by the fix in any file) where read as an attribute (``params.eps``);
    never a keyword argument of a call (``eps=`` to AdamW keeps its name: the callee decides)."""
    out, depth = [], 0
    tokens = _tokens(fixed)
    for n, tok in enumerate(tokens):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        after = tokens[n + 1].string if n + 1 < len(tokens) else ""
        attribute = n > 0 and tokens[n - 1].string == "."
        kwarg = depth > 0 and after == "=" and not attribute
        named = tok.string in local or (attribute and tok.string in fields)
        if tok.type == tokenize.NAME and not kwarg and named:
            tok = tok._replace(string=tok.string + suffix)
        out.append(tok)
    return tokenize.untokenize(out)


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def test_respelling_renames_what_a_fix_defines_and_keeps_keyword_arguments() -> None:
    original = "class P:\n    lr: float = 1.0\n\ndef make(p, eps):\n    return AdamW(lr=p.lr)\n"
    fixed = original.replace("1.0\n", "1.0\n    eps: float = 1e-13\n")
    assert introduced(original, fixed) == set()  # eps was a token of the file already
    other = "def make(p):\n    return AdamW(lr=p.lr, eps=p.eps)\n"
    text = respelled(fixed, set(), {"eps"}) + respelled(other, set(), {"eps"})
    assert "eps: float = 1e-13" in text and "AdamW(lr=p.lr, eps=p.eps_respelled)" in text
    fresh = "class P:\n    lr: float = 1.0\n"
    grown = fresh + "    eps: float = 1e-13\n"
    assert introduced(fresh, grown) == {"eps"}
    assert "eps_respelled: float = 1e-13" in respelled(grown, {"eps"}, {"eps"})


@pytest.mark.repro
@pytest.mark.network
@pytest.mark.parametrize("suggested", _on_newest(), ids=lambda s: s.name)
def test_the_same_fix_spelled_differently_gets_the_same_verdict(
    suggested: Suggested, tmp_path: Path
) -> None:
    """#51 (item 5's FP32 staging judged by its buffer's name): every name a suggested fix
    introduces, renamed, must leave the check's verdict fixed: no verdict depends on a name the
    contract does not mention (a name its must, domain or oracle mentions is kept)."""
    release_root = default_wheels().tree(RELEASE)
    patched = controlled_copy(release_root, tmp_path / "patched", suggested.edits(RELEASE))
    edited = [
        path
        for path in sorted((patched / "art").rglob("*.py"))
        if not (path.is_symlink() or any(p.is_symlink() for p in path.parents))
    ]
    texts = {p: p.read_text(encoding="utf-8") for p in edited}
    new = {
        p: introduced((release_root / p.relative_to(patched)).read_text(encoding="utf-8"), t)
        for p, t in texts.items()
    }
    # A name the contract mentions (main_grad, which ART's trainer reads) is the contract's own.
    said = " ".join(
        f"{c.contract.must} {c.contract.domain} {c.contract.oracle}"
        for c in CATALOG.get(suggested.item).claims
        if c.contract is not None
    )
    mentioned = set(re.findall(r"\b[A-Za-z]\w*_\w+", said))  # identifiers, not words
    new = {p: names - mentioned for p, names in new.items()}
    fields = set().union(*new.values())
    for path, text in texts.items():
        path.write_text(respelled(text, new[path], fields), encoding="utf-8")
    renamed_any = sorted(fields)
    if not renamed_any:
        pytest.skip(f"{suggested.name} introduces no name of its own")
    got = check(CATALOG, patched, suggested.item, f"{RELEASE} + {suggested.name}, respelled")
    assert got.status is CodeStatus.fixed, (
        f"{suggested.name} with {renamed_any} renamed: {got.status.value}: {got.detail}"
    )


def _neighbours() -> list[tuple[Suggested, int]]:
    """(a suggested fix, another checked item one of whose audited files the fix edits)."""
    out = []
    for suggested in _on_newest():
        globs = {files for files, _, _ in suggested.edits(RELEASE)}
        for finding in checkable(CATALOG):
            paths = {loc.path.removeprefix("src/art/") for loc in finding.locations}
            touched = any(fnmatch.fnmatch(p, g) for p in paths for g in globs)
            if finding.item != suggested.item and touched:
                out.append((suggested, finding.item))
    return out


@pytest.mark.repro
@pytest.mark.network
@pytest.mark.parametrize("pair", _neighbours(), ids=lambda p: f"{p[0].name}-item{p[1]}")
def test_no_suggested_fix_is_another_items_bug(pair: tuple[Suggested, int], tmp_path: Path) -> None:
    """#51 (1001's remedy was the path item 3 reports broken): a suggested fix, applied, leaves
    every other item whose code it edits no worse: no claim of it fixed on the release becomes
    reproduced, and its check still runs."""
    suggested, other = pair
    release_root = default_wheels().tree(RELEASE)
    patched = controlled_copy(release_root, tmp_path / "patched", suggested.edits(RELEASE))
    got = check(CATALOG, patched, other, f"{RELEASE} + {suggested.name}")
    assert got.status is not CodeStatus.could_not_run, got.detail
    before = recorded(CATALOG, other, RELEASE) or {}
    worse = [
        c for c, v in claim_verdicts(got).items() if v == "reproduced" and before.get(c) == "fixed"
    ]
    assert not worse, f"{suggested.name} makes item {other}'s {worse} reproduced: {got.detail}"


@pytest.mark.network
def test_a_half_fix_is_answered_partial_with_what_the_contract_still_requires(
    tmp_path: Path,
) -> None:
    """#51, item 6: an eps that reaches AdamW but not the cross-rank guard (the audit's fix names
    both) passes the regression test; `artbot test` answers partial, names the claim the contract
    still requires in the record's words, with its counterexample, and why the test passed."""
    control = load_adversarial(ADVERSARIAL / "item06_half_fix_eps_not_in_the_guard.toml")
    release_root = default_wheels().tree(RELEASE)
    patched = controlled_copy(release_root, tmp_path / "patched", control.edits)
    diff = tmp_path / "half.diff"
    diff.write_text(as_diff(release_root, patched), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--root", str(REPO), "test", "--item", "6", "--patch", str(diff)], env=NO_TOKEN
    )
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    contract = next(c.contract for c in CATALOG.get(6).claims if c.id == "eps-not-configurable")
    assert contract is not None
    assert ": partial" in text and "partial: fixes " in text  # plain text at a terminal (#52)
    assert f"the contract also requires eps-not-configurable: {contract.must}" in text
    assert "; counterexample: " in text and "xfail -> pass" in text
    assert "The regression test passes because it covers less" in text


SAME_FILE_HELPER = ADVERSARIAL / "item401_real_fp32_matmul_in_a_same_file_helper.toml"


@pytest.mark.network
def test_artbot_test_judges_a_fix_through_a_same_file_helper_fixed(tmp_path: Path) -> None:
    """#50: the regression test runs under the import harness, which imports
    ``unsloth/train.py`` whole: a fix of 401 whose ``_calculate_logprobs`` calls a helper defined
    in the same file resolves it, as in ART's checkout, and ``artbot test`` says fixed (a harness
    that compiled the function alone gave a NameError)."""
    control = load_adversarial(SAME_FILE_HELPER)
    assert control.kind == "real" and RELEASE in control.releases
    release_root = default_wheels().tree(RELEASE)
    patched = controlled_copy(release_root, tmp_path / "patched", control.edits)
    diff = tmp_path / "helper.diff"
    diff.write_text(as_diff(release_root, patched), encoding="utf-8")
    assert "+def _fp32_logits(" in diff.read_text(encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--root", str(REPO), "test", "--item", "401", "--patch", str(diff)], env=NO_TOKEN
    )
    assert result.exit_code == 0 and ": fixed" in result.output, result.output
    # The check says fixed either way; the regression test is what ran under the harness.
    line = next(s for s in result.output.splitlines() if s.startswith("Regression test "))
    assert line.endswith("xfail -> pass: 1 passed"), result.output
