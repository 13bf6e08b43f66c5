"""verify: anchors against a git repository built here; repros against real openpipe-art wheels.

The wheels come through the same cache + ``pip download`` path as ``artbot verify --release``
(the ``wheel_cache`` fixture of tests/conftest.py: ``$ARTBOT_CACHE_DIR``, else
``~/.cache/artbot/wheels``), so they are downloaded once per machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from artbot.cli import cli
from artbot.records.catalog import Catalog, load_catalog
from artbot.records.marker import VerifyMarker
from artbot.records.models import Location
from artbot.settings import CACHE_VARIABLE
from artbot.verify.anchors import AnchorStatus, check_location, verify_anchors
from artbot.verify.code import CodeResult, CodeStatus
from artbot.verify.isolation import ArtModules, NotLoadedError
from artbot.verify.notes import comments_to_post, verification_comment, verification_notes
from artbot.verify.rejudge import verify_code
from artbot.verify.release import fetch_release, release_tree
from artbot.verify.tree import open_tree
from tests.helpers.wheels import pin

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "tests" / "fixtures" / "mini"
VERSIONS = ("0.5.20", "0.5.21")

# A file as it was at the "audit commit": the anchors sit at lines 5 and 10.
LOSS = [
    "import torch",
    "",
    "",
    "def loss(x):",
    "    x = compute(x)",
    "    y = 1",
    "    z = 2",
    "    w = 3",
    "    v = 4",
    "    return x",
]
OK = {"path": "src/art/loss.py", "lines": [4, 6], "anchor": "x = compute(x)"}
MOVED = {"path": "src/art/loss.py", "lines": [1, 2], "anchor": "return x"}
NO_FILE = {"path": "src/art/gone.py", "lines": [1, 1], "anchor": "anything"}
NO_ANCHOR_LINE = {"path": "src/art/loss.py", "lines": [1, 3], "anchor": "not in the file"}
OUT_OF_RANGE = {"path": "src/art/loss.py", "lines": [40, 45], "anchor": "nor this"}
UNANCHORED = {"path": "src/art/loss.py", "lines": [2, 3]}


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=artbot", "-c", "user.email=artbot@example.com",
         "-c", "commit.gpgsign=false", *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return proc.stdout.strip()


@pytest.fixture
def art_repo(tmp_path: Path) -> tuple[Path, str]:
    """An ART-shaped git repository: the audit commit, then three lines inserted above."""
    repo = tmp_path / "ART"
    (repo / "src" / "art").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "src" / "art" / "loss.py").write_text("\n".join(LOSS) + "\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "audited")
    commit = git(repo, "rev-parse", "HEAD")
    (repo / "src" / "art" / "loss.py").write_text("\n".join(["# new"] * 3 + LOSS) + "\n")
    git(repo, "commit", "-q", "-am", "later")
    return repo, commit


def write_catalog(root: Path, commit: str, locations: list[dict[str, Any]]) -> Catalog:
    """The mini fixture catalog with item 7's locations replaced."""
    shutil.copytree(MINI, root)
    audit = yaml.safe_load((root / "findings" / "audit.yaml").read_text())
    (root / "findings" / "audit.yaml").write_text(yaml.safe_dump({**audit, "commit": commit}))
    finding = yaml.safe_load((root / "findings" / "07-tis.yaml").read_text())
    finding["locations"] = locations
    (root / "findings" / "07-tis.yaml").write_text(yaml.safe_dump(finding))
    return load_catalog(root)


ALL = [OK, MOVED, NO_FILE, NO_ANCHOR_LINE, OUT_OF_RANGE, UNANCHORED]


def test_anchors_are_read_at_the_audit_commit(tmp_path: Path, art_repo: tuple[Path, str]) -> None:
    repo, commit = art_repo
    catalog = write_catalog(tmp_path / "cat", commit, ALL)
    tree = open_tree(repo, catalog.audit)
    results = verify_anchors(catalog, tree)
    assert [(r.status, r.new_lines) for r in results] == [
        (AnchorStatus.ok, None),
        (AnchorStatus.moved, (9, 10)),  # same length, the anchor back inside
        (AnchorStatus.missing, None),
        (AnchorStatus.missing, None),
        (AnchorStatus.out_of_range, None),
        (AnchorStatus.no_anchor, None),
    ]
    assert results[2].detail == "file not found"
    assert "anchor not found" in results[3].detail


def test_anchors_fall_back_to_the_working_tree(tmp_path: Path, art_repo: tuple[Path, str]) -> None:
    repo, _ = art_repo
    catalog = write_catalog(tmp_path / "cat", "0123456", [OK])
    tree = open_tree(repo, catalog.audit)
    assert any("not in" in note for note in tree.notes)
    [result] = verify_anchors(catalog, tree)
    # Three lines were inserted above after the audit commit.
    assert (result.status, result.new_lines) == (AnchorStatus.moved, (6, 8))


def test_a_checkout_brings_the_packages_beside_art(
    tmp_path: Path, art_repo: tuple[Path, str]
) -> None:
    repo, commit = art_repo
    (repo / "src" / "art_inference").mkdir()
    (repo / "src" / "art_inference" / "__init__.py").write_text("")
    (repo / "src" / "notes").mkdir()  # not a package
    tree = open_tree(repo, write_catalog(tmp_path / "cat", commit, [OK]).audit)
    assert (tree.git_dir, tree.commit) == (repo, commit)
    assert tree.packages == ("art", "art_inference")


def test_anchors_cli_exit_codes_and_json(tmp_path: Path, art_repo: tuple[Path, str]) -> None:
    repo, commit = art_repo
    write_catalog(tmp_path / "bad", commit, ALL)
    write_catalog(tmp_path / "good", commit, [OK, UNANCHORED])
    run = CliRunner().invoke
    bad = run(cli, ["--root", str(tmp_path / "bad"), "verify", "anchors", "--art-src", str(repo)])
    assert bad.exit_code == 1, bad.output
    assert "moved         src/art/loss.py:1-2 -> 9-10" in bad.output
    args = ["--root", str(tmp_path / "good"), "verify", "anchors", "--art-src", str(repo), "--json"]
    good = run(cli, args)
    assert good.exit_code == 0, good.output
    data = json.loads(good.output)
    assert data["ok"] is True
    assert [loc["status"] for loc in data["locations"]] == ["ok", "no anchor"]
    assert run(cli, ["--root", str(tmp_path / "good"), "verify"]).exit_code == 2
    assert run(cli, ["--root", str(tmp_path / "good"), "verify", "anchors"]).exit_code == 2


@pytest.mark.parametrize(
    ("lines", "text", "expected"),
    [
        # the nearest of several occurrences wins
        ((10, 12), ["a"] * 3 + ["X"] + ["a"] * 10 + ["X"] + ["a"] * 5, (13, 15)),
        # the anchor sits above the range: the range starts at it
        ((10, 12), ["X"] + ["a"] * 14, (1, 3)),
        # a range running past the end of the file is moved back into it
        ((3, 5), ["a", "X", "a", "a"], (2, 4)),
        # a range longer than the file is cut to the file
        ((4, 8), ["a", "a", "X", "a"], (1, 4)),
    ],
)
def test_moved_ranges(lines: tuple[int, int], text: list[str], expected: tuple[int, int]) -> None:
    location = Location(path="src/art/x.py", lines=lines, anchor="X")
    status, new, _ = check_location(location, "\n".join(text))
    assert (status, new) == (AnchorStatus.moved, expected)


def test_anchor_match_ignores_indentation_only() -> None:
    location = Location(path="src/art/x.py", lines=(1, 1), anchor="  return x ")
    assert check_location(location, "        return x\n")[0] is AnchorStatus.ok
    assert check_location(location, "return x + 1\n")[0] is AnchorStatus.missing


# --------------------------------------------------------------------------- importing ART


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "art"


def test_modules_load_single_files_without_package_inits(tmp_path: Path) -> None:
    package = make_tree(tmp_path, {
        "art/__init__.py": "raise RuntimeError('the package __init__ must not run')\n",
        "art/sub/__init__.py": "from .impl import helper\n\nclass Thing:\n    pass\n",
        "art/sub/impl.py": "def helper():\n    return 41\n",
        "art/mod.py": "from .sub import Thing, helper\n\n"
                      "def f():\n    return helper() + 1\n\ndef g():\n    return Thing()\n",
    })  # fmt: skip
    with ArtModules(package) as art:
        mod = art.load("mod.py")
        assert mod.f() == 42
        with pytest.raises(NotLoadedError, match="art.sub.Thing"):
            mod.g()
        assert art.not_loaded == ["art.sub.Thing"]
    assert not [m for m in sys.modules if m == "art" or m.startswith("art.")]


def test_a_name_the_package_init_reexports_wins_over_its_same_named_submodule(
    tmp_path: Path,
) -> None:
    """As when ``art/utils/__init__.py`` runs (``from .retry import retry``): the package's
    name is the function, whichever is imported first, the submodule or the package's name."""
    package = make_tree(tmp_path, {
        "art/__init__.py": "",
        "art/utils/__init__.py": "from .retry import retry\nfrom .other import other\n",
        "art/utils/retry.py": "def retry(n):\n    return n + 1\n",
        "art/utils/other.py": "def other():\n    return 0\n",
        "art/first.py": "from art.utils import retry\n\nVALUE = retry(1)\n",
        "art/second.py": "import art.utils.other\nfrom art.utils import other\n\n"
                         "VALUE = other()\n",
    })  # fmt: skip
    with ArtModules(package) as art:
        assert art.load("first.py").VALUE == 2
        assert art.load("second.py").VALUE == 0
        assert sys.modules["art.utils.retry"].retry(2) == 3  # the submodule still imports
    assert not [m for m in sys.modules if m == "art" or m.startswith("art.")]


def test_modules_fail_loudly_on_a_missing_import_and_stand_in_for_listed_ones(
    tmp_path: Path,
) -> None:
    package = make_tree(tmp_path, {
        "art/__init__.py": "",
        "art/needs.py": "import surely_not_installed_anywhere\n",
        "art/typed.py": "from tinker_cookbook.renderers import Renderer\n\n"
                        "def make():\n    return Renderer()\n",
    })  # fmt: skip
    with ArtModules(package, stand_ins={"tinker_cookbook": "a client library"}) as art:
        with pytest.raises(ModuleNotFoundError, match="surely_not_installed_anywhere"):
            art.load("needs.py")
        typed = art.load("typed.py")
        with pytest.raises(NotLoadedError, match="stand-in"):
            typed.make()
        assert art.stand_ins_used == {"tinker_cookbook"}
    assert "tinker_cookbook" not in sys.modules


def test_a_check_that_cannot_import_reports_the_module(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path / "cat", "0123456", [OK])
    script = tmp_path / "cat" / "repros" / "item07.py"
    package = make_tree(tmp_path / "wheel", {
        "art/__init__.py": "",
        "art/good.py": "def holds():\n    return True\n",
        "art/bad.py": "import surely_not_installed_anywhere\n",
    })  # fmt: skip
    tree = open_tree(package.parent, catalog.audit)

    def run(file: str) -> CodeResult:
        script.write_text(
            "def check_art(art):\n"
            f"    hit = art.load({file!r}).holds()\n"
            "    return {'claims': {}, 'detail': 'measured', 'ran': [" + repr(file) + "]}\n"
        )
        [result] = verify_code(catalog, tree)
        return result

    ran = run("good.py")
    assert ran.status is CodeStatus.not_checked  # the record declares no claims
    assert ran.ran == ("good.py",)
    failed = run("bad.py")
    assert failed.status is CodeStatus.could_not_run
    assert "surely_not_installed_anywhere" in failed.detail
    assert "(at art/bad.py:1)" in failed.detail


def test_a_check_must_report_exactly_the_records_claims(tmp_path: Path) -> None:
    from artbot.records.models import Finding
    from artbot.verify.code import CheckContractError, claim_results

    finding = Finding.model_validate({**load_catalog(REPO).get(7).model_dump(mode="json")})
    [claim] = finding.claims
    assert claim_results(finding, {claim.id: (True, "x")})[claim.id].verdict.value == "reproduced"
    assert claim_results(finding, {claim.id: (None, "why")})[claim.id].verdict.value == (
        "not checked"
    )
    with pytest.raises(CheckContractError, match="declares"):
        claim_results(finding, {"another-claim": (True, "")})
    with pytest.raises(CheckContractError, match="True, False or None"):
        claim_results(finding, {claim.id: ("yes", "")})


# --------------------------------------------------------------------------- real releases


@pytest.fixture(scope="session")
def code_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """The real findings and repros of the CPU-checkable items."""
    root = tmp_path_factory.mktemp("catalog")
    (root / "findings").mkdir()
    for name in (
        "audit.yaml",
        "03-*.yaml",
        "06-*.yaml",
        "07-*.yaml",
        "08-*.yaml",
        "09-*.yaml",
        "10-*.yaml",
    ):
        for path in (REPO / "findings").glob(name):
            shutil.copy2(path, root / "findings" / path.name)
    shutil.copytree(REPO / "repros", root / "repros")
    # The recorded checks hold each release's wheel digest: `verify --release` pins by them.
    shutil.copytree(REPO / "findings" / "status", root / "findings" / "status")
    return load_catalog(root)


@pytest.fixture(scope="session")
def code_results(wheel_cache: Path, code_catalog: Catalog) -> dict[str, list[CodeResult]]:
    results = {}
    for version in VERSIONS:
        tree = release_tree(version, code_catalog.audit, wheel_cache, pin=pin(version))
        results[version] = verify_code(code_catalog, tree)
    return results


def statuses(results: list[CodeResult]) -> dict[int, CodeStatus]:
    return {r.item: r.status for r in results}


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.5.20", CodeStatus.reproduced), ("0.5.21", CodeStatus.fixed)],
)
def test_items_7_8_10_reproduce_on_0_5_20_only(
    code_results: dict[str, list[CodeResult]], version: str, expected: CodeStatus
) -> None:
    got = statuses(code_results[version])
    details = {r.item: r.detail for r in code_results[version]}
    assert {n: got[n] for n in (7, 8, 10)} == dict.fromkeys((7, 8, 10), expected), details
    for result in code_results[version]:
        assert result.source == f"openpipe-art {version}"
        assert result.ran, result  # ART's own code ran, not only the repro's model


def claims_of(result: CodeResult) -> dict[str, str]:
    return {k: v.verdict.value for k, v in result.claims.items()}


def test_items_3_6_9_reproduce_claim_by_claim_on_0_5_20(
    code_results: dict[str, list[CodeResult]],
) -> None:
    by_item = {r.item: r for r in code_results["0.5.20"]}
    for item in (3, 6, 9):
        assert by_item[item].status is CodeStatus.reproduced, by_item[item].detail
        assert set(claims_of(by_item[item]).values()) == {"reproduced"}
        assert by_item[item].scope  # part of the finding is modelled or read, and says so


def test_0_5_21_fixes_item_9s_masks_not_its_per_row_optimizer_step(
    code_results: dict[str, list[CodeResult]],
) -> None:
    by_item = {r.item: r for r in code_results["0.5.21"]}
    nine = by_item[9]
    assert nine.status is CodeStatus.partial, nine.detail
    assert claims_of(nine) == {
        "wrong-per-datum-masks": "fixed",
        "one-optimizer-step-per-packed-row": "reproduced",
    }
    # Item 3: equal-reward groups are dropped now, and finite rewards give no NaN: both of the
    # audit's claims are fixed. A group of -inf rewards still gives NaN, and rewards one ulp
    # apart near 1e4 still train at full scale: follow-up 1001's claims (issue #51; its controls
    # hold them).
    three = by_item[3]
    assert three.status is CodeStatus.fixed, three.detail
    assert claims_of(three) == {
        "full-scale-advantage-for-equal-reward-groups": "fixed",
        "nan-advantages": "fixed",
    }
    # Item 6: AdamParams still has no eps in 0.5.21.
    assert by_item[6].status is CodeStatus.reproduced


def test_releases_leave_no_art_modules_behind(code_results: dict[str, list[CodeResult]]) -> None:
    leftovers = [m for m in sys.modules if m.split(".")[0] in {"art", "art_inference", "openai"}]
    assert leftovers == []


def test_release_cli_prints_both_tables(
    wheel_cache: Path, code_catalog: Catalog, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        ["--root", str(code_catalog.root), "verify", "--release", "0.5.21", "--json"],
        env={CACHE_VARIABLE: str(wheel_cache)},
    )
    data = json.loads(result.output)
    assert data["anchors"]["source"] == data["code"]["source"] == "openpipe-art 0.5.21"
    assert {r["item"]: r["status"] for r in data["code"]["results"]}[7] == "fixed"
    # 0.5.21 moved the audited lines of loss.py: not every anchor is ok, which is information;
    # every check ran, so verify exits 0 unless asked to fail on what it found.
    assert data["anchors"]["ok"] is False
    assert result.exit_code == 0, result.output
    # Asked to, it exits 1 on the moved lines: shown on item 7 alone (loss.py moved in 0.5.21).
    item7 = tmp_path / "item7"
    shutil.copytree(code_catalog.root / "repros", item7 / "repros")
    (item7 / "findings").mkdir()
    for name in ("audit.yaml", "07-tis-fallback.yaml"):
        shutil.copy2(code_catalog.root / "findings" / name, item7 / "findings" / name)
    strict = CliRunner().invoke(
        cli,
        ["--root", str(item7), "verify", "--release", "0.5.21", "--fail-on", "moved"],
        env={CACHE_VARIABLE: str(wheel_cache)},
    )
    assert strict.exit_code == 1 and "--fail-on moved" in strict.output, strict.output
    assert "item 7:" in strict.output and "item 8" not in strict.output


def test_fetch_release_runs_pip_once_then_uses_the_cache(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def fake_pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        dest = Path(command[command.index("-d") + 1])
        (dest / "openpipe_art-9.9.9-py3-none-any.whl").write_bytes(b"")
        return subprocess.CompletedProcess(command, 0, "", "")

    first = fetch_release("9.9.9", tmp_path, run=fake_pip)
    again = fetch_release("9.9.9", tmp_path, run=fake_pip)
    assert first == again == tmp_path / "openpipe_art-9.9.9-py3-none-any.whl"
    assert calls == [[
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--python-version", "3.12", "openpipe-art==9.9.9", "-d", str(tmp_path),
    ]]  # fmt: skip


# --------------------------------------------------------------------------- notes and comments


def result(item: int, status: CodeStatus, scope: str | None = None) -> CodeResult:
    return CodeResult(item, status, "openpipe-art 0.5.21", "why", scope=scope)


def test_verification_notes() -> None:
    notes = verification_notes([
        result(7, CodeStatus.fixed),
        result(8, CodeStatus.reproduced),
        result(9, CodeStatus.fixed, scope="masks only"),
        result(10, CodeStatus.could_not_run),
    ])  # fmt: skip
    assert notes == {
        7: "no longer reproduces in openpipe-art 0.5.21",
        8: "still reproduces in openpipe-art 0.5.21",
        9: "no longer reproduces in openpipe-art 0.5.21 (masks only)",
        10: "could not be checked against openpipe-art 0.5.21: why",
    }


def test_verification_comment_carries_its_marker() -> None:
    body = verification_comment(7, "0.5.21", "fixed")
    assert body.startswith("<!-- artbot:verify item=7 version=0.5.21 status=fixed -->\n")
    assert "no longer reproduces in openpipe-art 0.5.21" in body
    assert VerifyMarker.find_all(body) == [VerifyMarker(7, "0.5.21", "fixed")]


def test_comments_to_post() -> None:
    reproduced = verification_comment(7, "0.5.20", CodeStatus.reproduced)
    fixed = verification_comment(7, "0.5.21", CodeStatus.fixed)
    other_item = verification_comment(8, "0.5.21", CodeStatus.fixed)
    assert comments_to_post([], 7, "0.5.21", "fixed") == [fixed]
    assert comments_to_post(["a human comment", reproduced], 7, "0.5.21", "fixed") == [fixed]
    assert comments_to_post([reproduced, fixed], 7, "0.5.21", "fixed") == []
    # nothing changed since the latest verification: no new comment for a new version
    assert comments_to_post([reproduced, fixed], 7, "0.5.22", "fixed") == []
    # it changed back: say so
    assert len(comments_to_post([fixed], 7, "0.5.22", "reproduced")) == 1
    assert comments_to_post([other_item], 7, "0.5.21", "fixed") == [fixed]
    assert comments_to_post([], 7, "0.5.21", "could not run") == []


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["0.5.20", "0.5.21", "0.6.0"]),
            st.sampled_from([CodeStatus.reproduced, CodeStatus.fixed, CodeStatus.could_not_run]),
        ),
        max_size=8,
    )
)
def test_posting_what_comments_to_post_returns_is_idempotent(
    runs: list[tuple[str, CodeStatus]],
) -> None:
    posted: list[str] = []
    for version, status in runs:
        posted += comments_to_post(posted, 7, version, status)
        assert comments_to_post(posted, 7, version, status) == []
    markers = [m for body in posted for m in VerifyMarker.find_all(body)]
    assert len({(m.version, m.status) for m in markers}) == len(markers)
    assert all(a.status != b.status for a, b in zip(markers, markers[1:], strict=False))
