"""Item 9: the legacy Tinker service builds the wrong per-datum masks and steps once per packed row.

Models (openpipe-art 0.5.20; the audit's commit e2a406a48 is in no release;
it lies between 0.5.20 and 0.5.21):

- ``art/tinker/service.py`` L136-L180, ``TinkerService.train``: for each packed row it builds
  one mask per unique group id, ``(group_ids == g) | (parent_ids == parent(g))`` with
  ``parent(g)`` the parent id at the group's first token (L137-L146); each mask selects the
  tokens of one ``tinker.Datum`` (L149-L166); ``custom_loss_fn`` writes each datum's logprobs
  back with ``logprobs[mask] = lp`` in mask order (L123-L124), so a later datum overwrites an
  earlier one; ``optim_step_async`` is awaited inside the per-row loop (L176-L181).
- ``art/megatron/prefix_tree_packing.py`` L241-L260 (``_prefix_segments``): group ids count
  up from 1 in emission order and a root segment's ``parent_id`` is its own ``group_id``
  (L258). ``art/preprocessing/pack.py`` (L278-L279, L671-L688, L716-L719) builds the Tinker
  rows with the same segment planner and fills a row's unused tail with group and parent -1.
- ``art/preprocessing/tokenize.py`` L927-L945 and ``pack.py`` L613-L637: a group's
  ``prompt_length`` is one token shorter than the shared prompt, and only that much is
  shareable, so every branch starts with one repeated prompt token that is not trained.

Assumptions, stated because the script does not run Tinker:

- Which positions a datum contains is decided by the mask alone; Tinker scores a datum's
  tokens causally in the order they have in the row, so the context of position t in a
  datum is the datum's positions up to t.
- A trainable token at position u is scored by the logprob at u - 1 (ART's loss shifts the
  assistant mask by one, loss.py L222), and that logprob comes from the last datum whose
  mask covers u - 1.
- Segment planner: ART's Tinker path packs with ``min_shared_segment_length=64``: TinkerBackend
  is a LocalBackend, whose ``_get_packed_tensors`` (``local/backend.py`` L1118-L1126) calls
  ``packed_tensors_from_tokenized_results`` with the default
  ``DEFAULT_MIN_PREFIX_TREE_SHARED_SEGMENT_LENGTH = 64`` (``preprocessing/pack.py`` L28);
  ``tinker/service.py`` reads those packed tensors from disk. A shared run shorter than 64
  tokens is not shared: each sequence becomes its own root segment, and its mask is then right.
  So the finding needs a group whose shareable prompt (``prompt_length``, one token short of
  the prompt) is at least 64 tokens; measured below as ``trigger``. The small rows that show
  the masks are packed with ``min_shared_segment_length=1`` so they stay readable: the same
  numbering ART gives rows whose prompts are long enough. Token ids are small integers chosen
  so every segment is recognisable; the padding token is 0 (ART uses the tokenizer's EOS).
- The suggested mask fix is the audit's ``(group == g) | (group == parent(g))``, applied in
  the same loop. 0.5.21 instead uses the group and all its ancestors (from
  ``art.megatron.prefix_tree.parse_prefix_tree_row``); that is reported beside it because
  the two differ once a shared prefix is itself a child (a system prompt shared by two
  prompts in one row). 0.5.21 still calls ``optim_step_async`` once per row.
- The optimizer-step count is taken from a stand-in training client that records calls in
  the order ART makes them; nothing about Tinker's optimizer is modelled beyond "one
  ``optim_step`` applies the gradients accumulated since the previous one".

Which layout ART's Tinker path packs (artbot's addition, run by ``check_art``):
TinkerBackend subclasses LocalBackend and does not set ``_supports_result_packing``, which
LocalBackend's ``__init__`` sets to False and ``_get_packed_tensors`` passes as
``pack_results`` (0.5.20 ``local/backend.py`` L348, L1124). With ``pack_results=False`` ART's
packer puts each sequence in its own row, so the two branches of a group are never in one row:
on ART's packer, a two-branch group with an 80-token prompt gives 2 rows of one root segment
each and no token in the wrong context. The mask bug shows on the layout the masks are written
for (``pack_results=True``: the shared prompt and both branches in one row), which this
script's rows have, and which ART's Tinker path does not produce as released.

Swappable pieces, for checking this model against ART itself:
``measure(pack_impl=...)`` takes ART's ``art.megatron.prefix_tree_packing.prefix_tree_pack``
as is (same signature, a result with ``tokens``/``group_ids``/``parent_ids`` of shape
``[1, L]``); ``measure(mask_impl=...)`` takes any ``(group_ids, parent_ids) -> list[mask]``
for one row. ``check_art`` does not use this model: it runs ART's packer and ART's own
``TinkerService.train`` (``tinker/service.py`` imported whole, ``_tinker_train``) with a
stand-in Tinker client, on every release; the check itself is in ``_tinker_check``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402
import _tinker_check  # noqa: E402
import _tinker_oracle  # noqa: E402
from _tinker_masks import (  # noqa: E402, F401 - re-exported: tests and measure() use them
    PAD_GROUP,
    PAD_TOKEN,
    MaskImpl,
    PackedRow,
    _lineage,
    _parent_map,
    ancestor_masks,
    audit_fix_masks,
    datum_positions,
    expected_contexts,
    optim_step_per_row,
    pad_row,
    prefix_tree_pack,
    row_report,
    scored_contexts,
    tinker_datum_masks,
)

# Each claim's judge and the inputs artbot draws for it, ART-free (issue #53): _tinker_oracle.
ORACLES = _tinker_oracle.ORACLES


@dataclass
class RecordingClient:
    """Stands in for Tinker's training client: records calls in the order ART makes them."""

    calls: list[str]

    def forward_backward_custom(self, data: Sequence[torch.Tensor]) -> None:
        self.calls.append(f"forward_backward({len(data)} datums)")

    def optim_step(self) -> None:
        self.calls.append("optim_step")


def train_rows(
    rows: Sequence[PackedRow],
    client: RecordingClient,
    *,
    mask_impl: MaskImpl,
    optim_step_per_row: bool = True,  # noqa: F811 - the AST reader of the same name is re-exported
) -> None:
    """Model of the loop in service.py L136-L180 (``optim_step_per_row=True``) and of the fix."""
    for row in rows:
        masks = mask_impl(row.group_ids, row.parent_ids)
        client.forward_backward_custom([row.tokens[mask] for _, mask in masks])
        if optim_step_per_row:  # service.py L176-L181: inside the per-row loop
            client.optim_step()
    if not optim_step_per_row:
        client.optim_step()


def two_branch_row(pack_impl: Callable[..., Any] = prefix_tree_pack) -> tuple[PackedRow, Any]:
    """One prompt, two sampled completions (the audit's two-branch case), padded to 16.

    Prompt 11..15; the group's prompt_length is 4 (one short of the shared prompt,
    tokenize.py L945), so the root is 11..14 and each branch repeats 15 before its
    completion (21..23 and 31..33)."""
    prompt = [11, 12, 13, 14, 15]
    seqs = [prompt + [21, 22, 23], prompt + [31, 32, 33]]
    return _build_row(seqs, shareable=[4, 4], prompt_len=5, seq_len=16, pack_impl=pack_impl)


def nested_row(pack_impl: Callable[..., Any] = prefix_tree_pack) -> tuple[PackedRow, Any]:
    """Two prompts sharing a system prompt (101..103) in one row, two completions each.

    Prompts 101..103 + 111..113 and 101..103 + 121..123, shareable up to 5 tokens each;
    completions 131/132, 141/142 and 151/152, 161/162. Padded to 24."""
    system = [101, 102, 103]
    p1, p2 = system + [111, 112, 113], system + [121, 122, 123]
    seqs = [p1 + [131, 132], p1 + [141, 142], p2 + [151, 152], p2 + [161, 162]]
    return _build_row(seqs, shareable=[5] * 4, prompt_len=6, seq_len=24, pack_impl=pack_impl)


def _build_row(
    seqs: list[list[int]],
    *,
    shareable: list[int],
    prompt_len: int,
    seq_len: int,
    pack_impl: Callable[..., Any],
    min_shared_segment_length: int = 1,
) -> tuple[PackedRow, torch.Tensor]:
    packed = pack_impl(
        [torch.tensor(s) for s in seqs],
        max_depth=seq_len,  # pack.py L680: the row planner allows any depth
        shareable_lengths=shareable,
        min_shared_segment_length=min_shared_segment_length,
    )
    row = pad_row(packed, seq_len)
    completion = {t for s in seqs for t in s[prompt_len:]}
    assistant = torch.tensor([t in completion for t in row.tokens.tolist()])
    return row, assistant


ART_MIN_SHARED_SEGMENT_LENGTH = 64  # pack.py L28, the Tinker path's packing default
TRIGGER_PROMPT_LENGTHS = (16, 64, 65, 128)


def trigger_row(
    prompt_len: int, pack_impl: Callable[..., Any] = prefix_tree_pack
) -> tuple[PackedRow, torch.Tensor]:
    """The two-branch case with a ``prompt_len``-token prompt, packed as ART's Tinker path packs
    (``min_shared_segment_length=64``; the group's shareable prompt is ``prompt_len - 1``)."""
    prompt = list(range(1000, 1000 + prompt_len))
    seqs = [prompt + [21, 22, 23], prompt + [31, 32, 33]]
    return _build_row(
        seqs,
        shareable=[prompt_len - 1] * 2,
        prompt_len=prompt_len,
        seq_len=2 * prompt_len + 8,
        pack_impl=pack_impl,
        min_shared_segment_length=ART_MIN_SHARED_SEGMENT_LENGTH,
    )


def measure_trigger(
    mask_impl: MaskImpl = tinker_datum_masks,
    pack_impl: Callable[..., Any] = prefix_tree_pack,
) -> dict[str, dict[str, Any]]:
    """Per prompt length: whether the row shares a prefix segment and whether a datum leaks."""
    out = {}
    for prompt_len in TRIGGER_PROMPT_LENGTHS:
        row, assistant = trigger_row(prompt_len, pack_impl)
        rep = row_report(row, assistant, mask_impl)
        out[str(prompt_len)] = {
            "shared_segment": any(g != p for g, p in _parent_map(*_ids_t(row)).items()),
            "leaked_positions": sum(len(v) for v in rep["extra"].values()),
            "wrong_context_tokens": rep["wrong_context_tokens"],
            "trainable_tokens": rep["trainable_tokens"],
        }
    return out


def _ids_t(row: PackedRow) -> tuple[torch.Tensor, torch.Tensor]:
    return row.group_ids, row.parent_ids


def measure(
    mask_impl: MaskImpl = tinker_datum_masks,
    *,
    optim_step_per_row: bool = True,  # noqa: F811 - the AST reader of the same name is re-exported
    rows_per_step: int = 4,
    pack_impl: Callable[..., Any] = prefix_tree_pack,
) -> dict[str, Any]:
    """Masks on a two-branch row and a nested row, and optimizer steps per ART step."""
    two, two_assistant = two_branch_row(pack_impl)
    nested, nested_assistant = nested_row(pack_impl)
    client = RecordingClient(calls=[])
    train_rows(
        [two] * rows_per_step,
        client,
        mask_impl=mask_impl,
        optim_step_per_row=optim_step_per_row,
    )
    return {
        "two_branch": row_report(two, two_assistant, mask_impl),
        "nested": row_report(nested, nested_assistant, mask_impl),
        "rows_per_step": rows_per_step,
        "optimizer_steps": client.calls.count("optim_step"),
        "calls": client.calls,
        "trigger": measure_trigger(mask_impl, pack_impl),
    }


def is_reproduced(m: dict[str, Any]) -> bool:
    """The audit's claims on its own setting, the two-branch row: a sibling branch leaks
    into a datum, the root's datum covers the whole row, and there is more than one
    optimizer step per ART step; and with ART's packing (min_shared_segment_length 64) a
    long enough prompt puts tokens in the wrong context."""
    two = m["two_branch"]
    sibling_leak = any(two["extra"][g] for g in two["expected"])
    root_whole = any(two["root_datum_covers_row"].values())
    extra_steps = m["optimizer_steps"] > 1
    at_art_packing = any(t["wrong_context_tokens"] for t in m["trigger"].values())
    return sibling_leak and root_whole and extra_steps and at_art_packing


def _in_wrong_context(m: dict[str, Any]) -> str:
    return f"{m['wrong_context_tokens']} of {m['trainable_tokens']}"


def build_report() -> _common.Report:
    """Item 9: Tinker per-datum masks and optimizer steps per packed row."""
    cited = measure()
    fixed = measure(audit_fix_masks, optim_step_per_row=False)
    chain = measure(ancestor_masks, optim_step_per_row=False)
    report = _common.Report(
        item="9",
        title="The legacy Tinker service builds the wrong per-datum masks and steps per packed row",
        models="art/tinker/service.py L136-L180; art/megatron/prefix_tree_packing.py L241-L260 "
        "(lines as released in 0.5.20; the audit cites service.py#L136-L180 at e2a406a48)",
        setting={
            "two-branch row group_ids": cited["two_branch"]["group_ids"],
            "two-branch row parent_ids": cited["two_branch"]["parent_ids"],
            "nested row group_ids": cited["nested"]["group_ids"],
            "nested row parent_ids": cited["nested"]["parent_ids"],
            "packed rows per ART step": cited["rows_per_step"],
        },
    )
    two, two_fixed = cited["two_branch"], fixed["two_branch"]
    for g in two["expected"]:
        report.measure(
            f"two-branch: datum for group {g} covers positions",
            two["datums"].get(g),
            fixed=two_fixed["datums"].get(g),
            note=f"its own group and ancestors: {two['expected'][g]}",
        )
    report.measure(
        "two-branch: positions leaked into each datum (group: positions)",
        {g: v for g, v in two["extra"].items() if v},
        fixed={g: v for g, v in two_fixed["extra"].items() if v},
        audit="sibling branches leak into each datum's context",
    )
    report.measure(
        "two-branch: root datum covers the whole non-padding row",
        two["root_datum_covers_row"],
        fixed=two_fixed["root_datum_covers_row"],
        audit="the root group's datum covers the whole row",
    )
    report.measure(
        "two-branch: trainable tokens scored in the wrong context",
        _in_wrong_context(two),
        fixed=_in_wrong_context(two_fixed),
        note="the second branch is scored after the first",
    )
    report.measure(
        "optimizer steps per ART step",
        cited["optimizer_steps"],
        fixed=fixed["optimizer_steps"],
        audit="optim_step_async sits inside the per-row loop",
        note=f"{cited['rows_per_step']} packed rows",
    )
    nested, nested_fixed = cited["nested"], fixed["nested"]
    report.measure(
        "nested row: trainable tokens scored in the wrong context",
        _in_wrong_context(nested),
        fixed=_in_wrong_context(nested_fixed),
        note=f"with the group and all ancestors (0.5.21): {_in_wrong_context(chain['nested'])}",
    )
    first_leaf = _first_leaf(nested)
    report.measure(
        f"nested row: datum for completion group {first_leaf} covers positions",
        nested["datums"][first_leaf],
        fixed=nested_fixed["datums"][first_leaf],
        note=f"should be {nested['expected'][first_leaf]}",
    )
    report.measure(
        "a datum of padding tokens is sent",
        two["padding_datum"],
        fixed=two_fixed["padding_datum"],
        note=f"with all ancestors, padding skipped: {chain['two_branch']['padding_datum']}",
    )
    for prompt_len, t in cited["trigger"].items():
        t_fixed = fixed["trigger"][prompt_len]
        report.measure(
            f"{prompt_len}-token prompt, min_shared_segment_length "
            f"{ART_MIN_SHARED_SEGMENT_LENGTH}: prefix shared / tokens in the wrong context",
            f"{'shared' if t['shared_segment'] else 'not shared'}, {_in_wrong_context(t)}",
            fixed=_in_wrong_context(t_fixed),
        )
    shared = [int(n) for n, t in cited["trigger"].items() if t["shared_segment"]]
    report.note(
        f"Trigger: ART's Tinker path packs with min_shared_segment_length "
        f"{ART_MIN_SHARED_SEGMENT_LENGTH}, so only a group whose prompt is long enough shares a "
        f"prefix segment (here from a {min(shared) if shared else '-'}-token prompt: its "
        "prompt_length, one token shorter, is the shareable part). Shorter prompts are packed "
        "as separate roots and their masks are right. The two small rows above are packed with "
        "min_shared_segment_length 1 to stay readable."
    )
    report.note(
        "Masks are listed as row positions. On the two-branch row every datum covers the whole "
        "row, so the second branch's tokens are scored with the first branch in their context."
    )
    report.note(
        "The audit's fix is right for one level of sharing but not when a shared prefix is "
        "itself a child (a system prompt shared by two prompts in one row): it leaves out the "
        "grandparent. 0.5.21 uses every ancestor; 0.5.21 still calls optim_step once per row."
    )
    report.reproduced = is_reproduced(cited)
    if is_reproduced(fixed):
        report.note("the suggested fix did not remove the measured effect")
    two = cited["two_branch"]
    masks_hit = any(two["extra"][g] for g in two["expected"]) and any(
        t["wrong_context_tokens"] for t in cited["trigger"].values()
    )
    report.claim("wrong-per-datum-masks", masks_hit)
    report.claim("one-optimizer-step-per-packed-row", cited["optimizer_steps"] > 1)
    return report


def _ids(rep: dict[str, Any]) -> tuple[list[int], list[int]]:
    return rep["group_ids"], rep["parent_ids"]


def _first_leaf(rep: dict[str, Any]) -> int:
    """The first group that is nobody's parent and not a root: a sampled completion."""
    parents = dict(zip(*_ids(rep), strict=True))
    parents.pop(PAD_GROUP, None)
    return min(g for g, p in parents.items() if g != p and g not in set(parents.values()))


def check_art(art: Any) -> dict[str, Any]:
    """Claim by claim on ART's own Tinker path (see ``_tinker_train``): ART's packer makes the
    rows of a two-branch group whose prompt is long enough to share (ART's
    ``DEFAULT_MIN_PREFIX_TREE_SHARED_SEGMENT_LENGTH`` + 16 tokens), and ART's
    ``TinkerService.train`` (``tinker/service.py`` imported whole, entered as LocalBackend calls
    it on a ``TinkerService`` ART builds, with a stand-in Tinker client) builds the datums'
    masks and steps the optimizer, over ART's ``TrainConfig`` values and 1-512 trajectories.
    The masks are checked on the layout they are written for (``pack_results=True``, one row
    holding the shared prompt and both branches); whether ART's Tinker path reaches that layout
    is run: a ``TinkerBackend`` built as ART builds it prepares a step through LocalBackend's
    ``_prepare_training_batch`` (``_tinker_check.tinker_pack_results``). The check itself is
    ``_tinker_check.check``, kept beside this script; each claim is split (issue #53): ART
    runs here and each input's raw facts are taped on ``art`` (``_tinker_property``), and
    ``ORACLES`` (``_tinker_oracle``, ART-free) draws the inputs and judges them, so artbot can
    draw them with its own seed and judge again in its process."""
    return _tinker_check.check(art)


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
