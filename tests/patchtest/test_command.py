"""#41: `/artbot test` parsed from a comment (pure), its caps, and the pure-Python applier of
unified diffs (refusing what it does not apply, naming the hunk that does not fit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.patchtest.command import (
    MAX_FILES,
    MAX_HUNKS,
    MAX_PATCH_BYTES,
    Refusal,
    Request,
    parse_command,
)
from artbot.patchtest.diff import (
    DiffRefused,
    DoesNotApply,
    apply_text,
    apply_to_folder,
    parse_diff,
)
from tests.helpers.patchdiff import make_diff

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "patchtest"
FIX_6 = (FIXTURES / "item06_fix.diff").read_text(encoding="utf-8")


def comment(head: str, diff: str | None = None) -> str:
    return head + (f"\n\nThis should fix it.\n\n```diff\n{diff}```\n" if diff else "\n")


def test_a_diff_with_a_release_is_a_request_for_that_release() -> None:
    parsed = parse_command(comment("/artbot test 0.5.23", FIX_6))
    assert isinstance(parsed, Request)
    assert parsed.release == "0.5.23" and parsed.pull is None
    assert [f.path for f in parsed.files] == [
        "src/art/trainer_rank/_impl.py",
        "src/art/trainer_rank/_optimizer.py",
    ]
    assert [len(f.hunks) for f in parsed.files] == [1, 2]
    assert parsed.files[0].wheel_path == "art/trainer_rank/_impl.py"


def test_without_a_release_the_newest_checked_one_is_meant_and_a_pr_is_a_number() -> None:
    parsed = parse_command(comment("/artbot test", FIX_6))
    assert isinstance(parsed, Request) and parsed.release is None
    pull = parse_command("  \n/artbot test 0.5.21 #1234\nplease")
    assert pull == Request("0.5.21", pull=1234)
    assert parse_command("/artbot test #77") == Request(None, pull=77)


@pytest.mark.parametrize(
    "body",
    [
        "Looks good. /artbot test #12",  # not at the start of the comment
        "/artbot tests #12",
        "/artbottest #12",
        "> /artbot test #12",  # a quote of someone else's request
        "",
    ],
)
def test_only_a_comment_that_starts_with_the_command_is_one(body: str) -> None:
    assert parse_command(body) is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("/artbot test", "needs a pull request"),
        ("/artbot test please", "takes an optional release"),
        ("/artbot test #12\n```diff\n" + FIX_6 + "```", "not both"),
        ("/artbot test\n```diff\n" + FIX_6, "not closed"),
        ("/artbot test\n```diff\nhello\n```", "no file in the diff"),
    ],
)
def test_a_malformed_request_is_refused_in_one_line(body: str, says: str) -> None:
    parsed = parse_command(body)
    assert isinstance(parsed, Refusal) and says in parsed.reason
    assert "\n" not in parsed.reason


def test_each_cap_when_hit_is_the_answer() -> None:
    big = "x" * (MAX_PATCH_BYTES + 1)
    over = parse_command(comment("/artbot test", make_diff("src/art/a.py", "a\n", big + "\n")))
    assert isinstance(over, Refusal) and "over the cap" in over.reason and "bytes" in over.reason
    many = "".join(make_diff(f"src/art/m{n}.py", "a\n", "b\n") for n in range(MAX_FILES + 1))
    files = parse_command(comment("/artbot test", many))
    assert isinstance(files, Refusal) and f"cap of {MAX_FILES}" in files.reason
    old = "".join(f"line {n}\n" for n in range(0, 20 * (MAX_HUNKS + 1)))
    new = old.replace("0\n", "0!\n")
    hunks = parse_command(comment("/artbot test", make_diff("src/art/h.py", old, new, context=0)))
    assert isinstance(hunks, Refusal) and f"cap of {MAX_HUNKS}" in hunks.reason


REFUSED = {
    "outside src/art/": make_diff("tests/test_x.py", "a\n", "b\n"),
    "setup.py": make_diff("setup.py", "a\n", "b\n"),
    "..": make_diff("src/art/../../etc/passwd", "a\n", "b\n"),
    "absolute": "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
    "renames": (
        "diff --git a/src/art/a.py b/src/art/b.py\nsimilarity index 90%\n"
        "rename from src/art/a.py\nrename to src/art/b.py\n"
    ),
    "binary": (
        "diff --git a/src/art/a.bin b/src/art/a.bin\nindex 1..2 100644\n"
        "Binary files a/src/art/a.bin and b/src/art/a.bin differ\n"
    ),
    "symlink": (
        "diff --git a/src/art/link b/src/art/link\nnew file mode 120000\n"
        "--- /dev/null\n+++ b/src/art/link\n@@ -0,0 +1 @@\n+/root/.config/gh/hosts.yml\n"
    ),
    "mode": (
        "diff --git a/src/art/a.py b/src/art/a.py\nold mode 100644\nnew mode 100755\n"
        "--- a/src/art/a.py\n+++ b/src/art/a.py\n@@ -1 +1 @@\n-a\n+b\n"
    ),
    "quoted": '--- "a/src/art/\\303\\251.py"\n+++ "b/src/art/\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n',
    "counts": "--- a/src/art/a.py\n+++ b/src/art/a.py\n@@ -1,2 +1,2 @@\n-a\n+b\n+c\n",
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_what_is_not_applied_is_refused_before_anything_is_read(kind: str) -> None:
    with pytest.raises(DiffRefused):
        parse_diff(REFUSED[kind])
    parsed = parse_command(comment("/artbot test", REFUSED[kind]))
    assert isinstance(parsed, Refusal) and "\n" not in parsed.reason


_LINES = st.lists(st.sampled_from(["a", "b", "c", "", "    x = 1", "def f():"]), max_size=30)


@given(old=_LINES, new=_LINES, context=st.integers(0, 3))
def test_a_diff_applies_back_to_its_new_text(old: list[str], new: list[str], context: int) -> None:
    """What difflib writes applies to the old text, giving the new one."""
    old_text = "".join(f"{ln}\n" for ln in old)
    new_text = "".join(f"{ln}\n" for ln in new)
    if old_text == new_text:
        return
    [patch] = parse_diff(make_diff("src/art/x.py", old_text, new_text, context=context))
    assert apply_text(old_text, patch) == new_text


@given(
    old=st.lists(st.integers(0, 40), unique=True, max_size=25),
    new=st.lists(st.integers(0, 40), unique=True, max_size=25),
    context=st.integers(1, 3),
    prefix=st.integers(1, 5),
)
def test_a_diff_still_applies_where_the_file_moved_on_above_it(
    old: list[int], new: list[int], context: int, prefix: int
) -> None:
    """With lines added above every hunk it still applies, as git apply's offsets do (lines
    unique, so each hunk's context fits one place only)."""
    old_text = "".join(f"line {n}\n" for n in old)
    new_text = "".join(f"line {n}\n" for n in new)
    if old_text == new_text or not old_text:
        return
    [patch] = parse_diff(make_diff("src/art/x.py", old_text, new_text, context=context))
    moved = "".join(f"# header {n}\n" for n in range(prefix))
    assert apply_text(moved + old_text, patch) == moved + new_text


def test_a_hunk_that_does_not_fit_is_refused_by_its_header() -> None:
    [patch] = parse_diff(make_diff("src/art/x.py", "a\nb\nc\n", "a\nB\nc\n"))
    with pytest.raises(DoesNotApply) as refused:
        apply_text("a\nz\nc\n", patch)
    assert "the hunk -1,3 +1,3 does" in str(refused.value) and "-b" in refused.value.hunk
    with pytest.raises(DoesNotApply, match="not in this release"):
        apply_text(None, patch)


def test_no_newline_at_the_end_of_a_file_is_kept_or_added_as_the_diff_says() -> None:
    diff = (
        "--- a/src/art/x.py\n+++ b/src/art/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n"
        "\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    [patch] = parse_diff(diff)
    assert apply_text("a\nb", patch) == "a\nc"
    added = (
        "--- a/src/art/x.py\n+++ b/src/art/x.py\n@@ -1 +1 @@\n-b\n"
        "\\ No newline at end of file\n+b\n"
    )
    [patch] = parse_diff(added)
    assert apply_text("b", patch) == "b\n"


def test_a_folder_is_written_only_when_every_file_applies(tmp_path: Path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    (art / "a.py").write_text("one\n")
    (art / "b.py").write_text("two\n")
    diff = make_diff("src/art/a.py", "one\n", "ONE\n") + make_diff("src/art/b.py", "2\n", "3\n")
    with pytest.raises(DoesNotApply, match="src/art/b.py"):
        apply_to_folder(tmp_path, parse_diff(diff))
    assert (art / "a.py").read_text() == "one\n"
    created = "--- /dev/null\n+++ b/src/art/sub/new.py\n@@ -0,0 +1 @@\n+new\n"
    assert apply_to_folder(tmp_path, parse_diff(created)) == ["art/sub/new.py"]
    assert (art / "sub" / "new.py").read_text() == "new\n"


def test_a_symlink_in_the_tree_is_never_written_through(tmp_path: Path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text("one\n")
    (art / "a.py").symlink_to(outside)
    with pytest.raises(DoesNotApply, match="not a plain file"):
        apply_to_folder(tmp_path, parse_diff(make_diff("src/art/a.py", "one\n", "two\n")))
    assert outside.read_text() == "one\n"
