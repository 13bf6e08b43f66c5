"""Tests for artbot.tracking.checklist: the template's lines, placement in the seed, and
properties."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from artbot.tracking.checklist import (
    END_MARKER,
    START_MARKER,
    ChecklistEntry,
    ChecklistError,
    apply_block,
    read_block,
)

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"

# The first 28 lines of the tracking issue as a human wrote it (the audit's seed text), verbatim.
SEED = """Tracking: numerical issues found in an audit of ART main after #1105

This is a tracking issue, so the work is to open the dedicated issues it lists, not to patch code. Start from the linked files: trainer_rank/_impl.py for the BF16 logits, trainer_rank/_versions.py for LoRA gradient accumulation, loss.py for the importance-sampling and PPO ratio paths, and tinker/service.py for the mask construction. Done means each unopened item has its own issue with the file, the expected behaviour and a reproduction or test.

After #1105 fixed a BF16 cross-entropy dead zone in TrainerRank, we audited the rest of ART at e2a406a48 for numerical issues. This issue tracks what we found. The audit found 11 items. The top three have dedicated issues; the other eight are described below in enough detail to open dedicated issues later. Items are ranked by expected impact × likelihood on live training paths. Line links point to e2a406a48. Every item listed here also exists in the revision before #925.

Dedicated issues

• #1108: Megatron backend: Transformer Engine's fused cross-entropy zeroes target gradients for p ≥ 0.998 (the same bug as #1105). Affects RL and SFT. Confirmed by running TE's own kernel.
• #1109: Unsloth backend: BF16 logsumexp zeroes logprobs and target gradients for p ≥ about 0.88. This is on ART's default local backend. Confirmed on CPU with the same operations; the GPU dtype still needs confirming.
• #1110: GRPO: equal-reward groups can become a full-scale advantage signal, or NaN, after pack normalization. Confirmed.

Not yet opened

4. BF16 LM-head output logits (TrainerRank, Megatron, serving)

• Where: trainer_rank/_impl.py#L5948-L5971 (_local_logits_from_hidden_rows). The Megatron output layer and vLLM do the same.
• What: logits come out of the output-layer GEMM in BF16. After #1105, everything downstream is FP32.
• Why it might matter: logits around 35–47 have a BF16 spacing of 0.25, so each logit carries up to ±0.125 of rounding.
• Measured on CPU with Qwen3-4B (294 assistant tokens):
  • per-token logprob error is 0.075 nats at p90 and 0.13 at p99;
  • the summed hidden-state gradient changes by 1.1% (cosine 0.99994);
  • the expected bias of 1 − p_t is about +0.5%.
• Effect: noise rather than bias for SFT. For RL, roughly 0.1 nats of per-token noise matters next to a PPO clip of ε = 0.2, and it may add to the trainer/sampler mismatch.
• Confidence: confirmed by measurement. Impact is likely low for SFT and plausible-to-moderate for RL ratios.
• Suggested check: a GPU A/B with an FP32-output GEMM for the head chunk. Compare trainer and vLLM logprobs on the same tokens: the |Δ| quantiles and the fraction with |Δ| > 0.1. Admission must price the larger chunk.

5. TrainerRank accumulates LoRA gradients in BF16
"""  # noqa: E501

LAST_DEDICATED = "• #1110: GRPO: equal-reward groups"


def render(entries: list[ChecklistEntry], audit_commit: str = "e2a406a48") -> str:
    """Render the checklist template the way artbot.render.issue does."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("checklist.md.j2").render(entries=entries, audit_commit=audit_commit)


def canonical(block: str) -> str:
    """The block as apply_block stores it: LF only, ending in a newline unless empty."""
    text = block.replace("\r\n", "\n").replace("\r", "\n")
    return text if not text or text.endswith("\n") else text + "\n"


def region(block: str, nl: str = "\n") -> str:
    return START_MARKER + nl + canonical(block).replace("\n", nl) + END_MARKER


def split_region(body: str) -> tuple[str, str, str]:
    start = body.index(START_MARKER)
    end = body.index(END_MARKER) + len(END_MARKER)
    return body[:start], body[start:end], body[end:]


EXAMPLES = [
    ChecklistEntry(4, "BF16 LM-head output logits", 1112, "open", None),
    ChecklistEntry(4, "BF16 LM-head output logits", 1112, "closed", "not_planned"),
    ChecklistEntry(4, "BF16 LM-head output logits", 1112, "closed", "duplicate"),
    ChecklistEntry(5, "TrainerRank accumulates LoRA gradients in BF16", None, None, None),
]
BLOCK = render(EXAMPLES)


# --- the template ---------------------------------------------------------------------------


def test_template_renders_one_task_line_per_entry():
    lines = BLOCK.split("\n")
    assert lines[0].startswith("_Maintained by artbot from the audit at e2a406a48.")
    assert "overwritten" in lines[0]
    assert lines[1] == ""
    assert lines[2:] == [
        "- [ ] 4. BF16 LM-head output logits — #1112",
        "- [x] 4. BF16 LM-head output logits — #1112 (not planned)",
        "- [x] 4. BF16 LM-head output logits — #1112 (duplicate)",
        "- [ ] 5. TrainerRank accumulates LoRA gradients in BF16",
        "",  # the block ends in a newline
    ]


def test_template_completed_reopened_and_note():
    block = render(
        [
            ChecklistEntry(6, "Adam epsilon", 1113, "closed", "completed"),
            ChecklistEntry(7, "TIS fallback", 1114, "open", "reopened"),
            ChecklistEntry(
                8,
                "Unclamped exp",
                1115,
                "closed",
                "not_planned",
                note="no longer reproduces in openpipe-art 0.5.21",
            ),
            ChecklistEntry(9, "Tinker masks", 1116, "open", None, note="fix in review"),
        ]
    )
    assert block.splitlines()[2:] == [
        "- [x] 6. Adam epsilon — #1113",
        "- [ ] 7. TIS fallback — #1114",
        "- [x] 8. Unclamped exp — #1115 (not planned) — no longer reproduces in "
        "openpipe-art 0.5.21",
        "- [ ] 9. Tinker masks — #1116 — fix in review",
    ]


def test_template_with_no_entries_is_just_the_notice():
    assert render([]).splitlines()[1:] == [""]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"title": "two\nlines"},
        {"title": " "},
        {"note": "a\r\nb"},
        {"item": 0},
        {"issue": 0},
        {"issue": None, "state": "open"},
        {"issue": None, "state": None, "state_reason": "completed"},
        {"state": "merged"},
    ],
)
def test_entry_rejects_values_that_would_break_the_list(kwargs):
    fields = {"item": 4, "title": "t", "issue": 1112, "state": "open", "state_reason": None}
    with pytest.raises(ValueError):
        ChecklistEntry(**(fields | kwargs))


# --- placement in the seed ------------------------------------------------------------------


def test_seed_block_lands_after_dedicated_issues_bullets():
    at = SEED.index("\n", SEED.index(LAST_DEDICATED)) + 1
    result = apply_block(SEED, BLOCK)
    # One blank line, the block, and the seed's own blank line before "Not yet opened".
    assert result == SEED[:at] + "\n" + region(BLOCK) + "\n" + SEED[at:]
    assert result.index(LAST_DEDICATED) < result.index(START_MARKER)
    assert result.index(END_MARKER) < result.index("\nNot yet opened\n")
    assert read_block(result) == BLOCK
    assert apply_block(result, BLOCK) == result


def test_seed_with_crlf_gets_a_crlf_block_and_keeps_every_byte():
    seed = SEED.replace("\n", "\r\n")
    at = seed.index("\r\n", seed.index(LAST_DEDICATED)) + 2
    result = apply_block(seed, BLOCK)
    assert result == seed[:at] + "\r\n" + region(BLOCK, "\r\n") + "\r\n" + seed[at:]
    assert "\n" not in result.replace("\r\n", "")
    assert read_block(result) == BLOCK
    assert apply_block(result, BLOCK) == result


def test_seed_update_changes_only_the_block():
    first = apply_block(SEED, BLOCK)
    closed = render([ChecklistEntry(4, "BF16 LM-head output logits", 1112, "closed", "completed")])
    second = apply_block(first, closed)
    before, _, after = split_region(first)
    assert second == before + region(closed) + after
    assert read_block(second) == closed


@pytest.mark.parametrize(
    ("body", "at"),
    [
        # A markdown heading and "-" bullets, then more text.
        ("# T\n\n## Dedicated issues\n\n- #1108: a\n- #1109: b\n## Next\n", "- #1109: b\n"),
        # "*" bullets with an indented continuation line and a loose (blank-separated) item.
        (
            "**Dedicated issues:**\n* #1108: a\n  more\n\n* #1109: b\n\nrest\n",
            "* #1109: b\n",
        ),
        # Numbered bullets and a trailing colon.
        ("Dedicated issues:\n1. #1108\n2) #1109\nrest", "2) #1109\n"),
    ],
)
def test_insertion_after_dedicated_list_variants(body, at):
    p = body.index(at) + len(at)
    result = apply_block(body, BLOCK)
    following_blank = body[p:].startswith("\n")
    mid = "\n" + region(BLOCK) + "\n" + ("" if following_blank else "\n")
    assert result == body[:p] + mid + body[p:]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, region(BLOCK) + "\n"),
        ("", region(BLOCK) + "\n"),
        ("text", "text\n\n" + region(BLOCK) + "\n"),
        ("text\n", "text\n\n" + region(BLOCK) + "\n"),
        ("text\n\n", "text\n\n" + region(BLOCK) + "\n"),
        ("a\r\nb", "a\r\nb\r\n\r\n" + region(BLOCK, "\r\n") + "\r\n"),
        # The list is the last thing in the body, with no final newline.
        ("Dedicated issues\n• #1108", "Dedicated issues\n• #1108\n\n" + region(BLOCK) + "\n"),
        # A heading with no bullets, or the phrase inside a sentence, is no anchor: append.
        (
            "## Dedicated issues\n\nnone yet\n",
            "## Dedicated issues\n\nnone yet\n\n" + region(BLOCK) + "\n",
        ),
        (
            "See Dedicated issues below\n- x\n",
            "See Dedicated issues below\n- x\n\n" + region(BLOCK) + "\n",
        ),
    ],
)
def test_append_and_empty_bodies(body, expected):
    assert apply_block(body, BLOCK) == expected
    assert apply_block(expected, BLOCK) == expected


def test_text_sharing_a_line_with_a_marker_is_kept():
    body = f"intro {START_MARKER}old{END_MARKER} outro\n"
    assert apply_block(body, "new\n") == f"intro {START_MARKER}\nnew\n{END_MARKER} outro\n"
    assert read_block(body) == "old"


def test_empty_block_and_block_without_final_newline():
    assert apply_block("x\n", "") == f"x\n\n{START_MARKER}\n{END_MARKER}\n"
    assert read_block(apply_block("x\n", "")) == ""
    assert read_block(apply_block("x\n", "line")) == "line\n"


def test_read_block_without_a_block():
    assert read_block(None) is None
    assert read_block("") is None
    assert read_block(SEED) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (f"a\n{START_MARKER}\nrest of the issue\n", "line 2: checklist start marker has no"),
        (f"a\n{END_MARKER}\n", "line 2: checklist end marker has no"),
        (f"{END_MARKER}\n{START_MARKER}\n", "line 1: checklist end marker comes before"),
        (region("a") + "\n" + region("b"), "more than one checklist block"),
        (region("a") + START_MARKER, "more than one checklist block"),
    ],
)
def test_broken_markers_raise_and_edit_nothing(body, message):
    with pytest.raises(ChecklistError, match=message):
        apply_block(body, BLOCK)
    with pytest.raises(ValueError, match=message):
        read_block(body)


def test_block_containing_a_marker_is_refused():
    with pytest.raises(ChecklistError, match="must not contain"):
        apply_block("x", f"a\n{END_MARKER}\nb\n")


# --- properties -----------------------------------------------------------------------------

# Pieces that look like the things apply_block searches for, mixed with arbitrary text.
FRAGMENTS = [
    "Dedicated issues\n",
    "## Dedicated issues\r\n",
    "**Dedicated issues:**\n",
    "• #1108: Megatron\n",
    "- #1109: Unsloth\r\n",
    "* [ ] #1 a task\n",
    "- [x] #2 done\r\n",
    "  continued\n",
    "1. item\n",
    "\n",
    "\r\n",
    "\r",
    "é ✓ 漢字 🙂",
    "<!-- a human comment -->",
    "<!-- artbot:checklist",
    "-->",
    "Not yet opened\n",
]
text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=8).map(
    "".join
)
human = text.filter(lambda t: START_MARKER not in t and END_MARKER not in t)
blocks = st.one_of(
    st.lists(st.sampled_from([e.title for e in EXAMPLES] + ["- [ ] #9 x", ""]), max_size=4).map(
        "\n".join
    ),
    text,
).filter(lambda t: START_MARKER not in t and END_MARKER not in t)
newlines = st.sampled_from(["\n", "\r\n"])


@given(body=st.one_of(st.none(), human), block=blocks)
def test_applying_twice_equals_applying_once(body, block):
    once = apply_block(body, block)
    assert apply_block(once, block) == once
    assert read_block(once) == canonical(block)


@given(body=human, block=blocks)
def test_insertion_only_adds_the_block_and_blank_lines(body, block):
    result = apply_block(body, block)
    start, marked, _ = split_region(result)
    # Some split point p of the body has the original bytes on both sides of the insertion,
    # and what lies between is the block plus blank lines. Several p may keep the bytes (a body
    # ending in " -->\n" also matches the block's own end), so look at every one of them.
    splits = [
        p for p in range(len(body) + 1) if result.startswith(body[:p]) and result.endswith(body[p:])
    ]
    inserted = [result[p : len(result) - (len(body) - p)] for p in splits]
    assert any(text.strip("\r\n") == marked for text in inserted), (body, result)


@given(before=human, after=human, old=blocks, new=blocks, nl=newlines)
def test_text_around_an_existing_block_survives_byte_for_byte(before, after, old, new, nl):
    body = before + region(old, nl) + after
    assert apply_block(body, new) == before + region(new, nl) + after


@given(body=human, first=blocks, second=blocks)
def test_reapplying_a_different_block_changes_only_the_block(body, first, second):
    once = apply_block(body, first)
    twice = apply_block(once, second)
    before, _, after = split_region(once)
    assert twice == before + split_region(twice)[1] + after
    assert read_block(twice) == canonical(second)


@given(body=human, first=blocks, second=blocks, edits=st.tuples(human, human, human, human))
def test_human_edits_after_the_first_apply_survive_the_second(body, first, second, edits):
    before, marked, after = split_region(apply_block(body, first))
    prepend, pre_block, post_block, append = edits
    edited = prepend + before + pre_block + marked + post_block + after + append
    assume(edited.count(START_MARKER) == 1 and edited.count(END_MARKER) == 1)
    result = apply_block(edited, second)
    new_marked = split_region(result)[1]
    assert result == prepend + before + pre_block + new_marked + post_block + after + append
    assert read_block(result) == canonical(second)


@given(lines=st.lists(human.map(lambda t: t.replace("\r", "").replace("\n", "")), max_size=6))
def test_crlf_body_gets_a_crlf_block(lines):
    body = "\r\n".join([*lines, ""]) if lines else ""
    result = apply_block(body, BLOCK)
    assert "\n" not in result.replace("\r\n", "") or not body
    assert apply_block(result, BLOCK) == result
