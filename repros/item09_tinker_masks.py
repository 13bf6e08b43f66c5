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

Swappable pieces, for checking this model against ART itself:
``measure(pack_impl=...)`` takes ART's ``art.megatron.prefix_tree_packing.prefix_tree_pack``
as is (same signature, a result with ``tokens``/``group_ids``/``parent_ids`` of shape
``[1, L]``); ``measure(mask_impl=...)`` takes any ``(group_ids, parent_ids) -> list[mask]``
for one row. ART's 0.5.20 masks are inline in ``TinkerService.train`` and cannot be imported;
0.5.21's can be wrapped from ``parse_prefix_tree_row`` (see ``ancestor_masks``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

PAD_GROUP = -1  # pack.py L278-L279: unused row positions carry group and parent id -1
PAD_TOKEN = 0

# One row's group and parent ids in, one (group the datum is built for, mask) pair per datum out.
MaskImpl = Callable[[torch.Tensor, torch.Tensor], list[tuple[int, torch.Tensor]]]


@dataclass(frozen=True)
class PackedRow:
    """The fields of ART's ``PrefixTreePack`` that the Tinker path reads, shaped ``[1, L]``."""

    tokens: torch.Tensor
    group_ids: torch.Tensor
    parent_ids: torch.Tensor


def prefix_tree_pack(
    sequences: Iterable[torch.Tensor],
    *,
    max_depth: int,
    shareable_lengths: Iterable[int] | None = None,
    min_shared_segment_length: int = 1,
) -> PackedRow:
    """Model of ART's prefix-tree packer: shared prefixes once, then each branch after them.

    Segments are emitted depth first; group ids count up from 1 in emission order and a root
    segment's parent id is its own group id (prefix_tree_packing.py L241-L260).
    """
    rows = [[int(t) for t in s.tolist()] for s in sequences]
    limits = [len(r) for r in rows] if shareable_lengths is None else list(shareable_lengths)
    segments: list[tuple[int, int, int, int, int]] = []  # (seq, start, end, group, parent)

    def emit(seq: int, start: int, end: int, parent: int | None) -> int:
        group = len(segments) + 1
        segments.append((seq, start, end, group, group if parent is None else parent))
        return group

    def walk(members: list[int], start: int, parent: int | None, depth: int) -> None:
        live = [i for i in members if len(rows[i]) > start]
        share = [i for i in live if limits[i] > start]
        for i in live:
            if i not in share:
                emit(i, start, len(rows[i]), parent)
        if not share:
            return
        if max_depth == 0 or len(share) == 1 or (parent is not None and depth >= max_depth):
            for i in share:
                emit(i, start, len(rows[i]), parent)
            return
        end = start
        stop = min(min(len(rows[i]), limits[i]) for i in share)
        while end < stop and len({rows[i][end] for i in share}) == 1:
            end += 1
        if end > start and end - start >= min_shared_segment_length:
            walk(share, end, emit(share[0], start, end, parent), depth + 1)
            return
        if end > start:
            # Too short to share (prefix_tree_packing.py L334-L349): a sequence that cannot
            # branch past ``end`` is emitted whole from ``start``; the rest are regrouped by
            # their token at ``end`` and walked again from ``start``.
            rebranch: dict[int, list[int]] = {}
            for i in share:
                if len(rows[i]) > end and limits[i] > end:
                    rebranch.setdefault(rows[i][end], []).append(i)
                else:
                    emit(i, start, len(rows[i]), parent)
            for branch in rebranch.values():
                walk(branch, start, parent, depth)
            return
        branches: dict[int, list[int]] = {}
        for i in share:  # first-seen order of the next token, as ART partitions branches
            branches.setdefault(rows[i][start], []).append(i)
        for branch in branches.values():
            walk(branch, start, parent, depth)

    walk(list(range(len(rows))), 0, None, 0)
    tokens = [t for seq, start, end, _, _ in segments for t in rows[seq][start:end]]
    groups = [g for _, start, end, g, _ in segments for _ in range(end - start)]
    parents = [p for _, start, end, _, p in segments for _ in range(end - start)]
    return PackedRow(
        tokens=torch.tensor([tokens]),
        group_ids=torch.tensor([groups]),
        parent_ids=torch.tensor([parents]),
    )


def pad_row(row: Any, seq_len: int) -> PackedRow:
    """Place a packed row in a ``seq_len`` buffer as pack.py does: -1 ids, pad tokens."""
    length = int(row.tokens.shape[-1])
    tokens = torch.full((seq_len,), PAD_TOKEN, dtype=torch.long)
    groups = torch.full((seq_len,), PAD_GROUP, dtype=torch.long)
    parents = torch.full((seq_len,), PAD_GROUP, dtype=torch.long)
    tokens[:length] = row.tokens.reshape(-1)
    groups[:length] = row.group_ids.reshape(-1)
    parents[:length] = row.parent_ids.reshape(-1)
    return PackedRow(tokens, groups, parents)


def tinker_datum_masks(
    group_ids: torch.Tensor, parent_ids: torch.Tensor
) -> list[tuple[int, torch.Tensor]]:
    """Model of service.py L137-L146: ``(group == g) | (parent == parent(g))`` per unique group."""
    masks = []
    for group_id in group_ids.unique():  # sorted, so the padding group -1 comes first
        parent_id = parent_ids[group_ids == group_id][0]
        masks.append((int(group_id), (group_ids == group_id) | (parent_ids == parent_id)))
    return masks


def audit_fix_masks(
    group_ids: torch.Tensor, parent_ids: torch.Tensor
) -> list[tuple[int, torch.Tensor]]:
    """The audit's suggested fix, in the same loop: ``(group == g) | (group == parent(g))``."""
    masks = []
    for group_id in group_ids.unique():
        parent_id = parent_ids[group_ids == group_id][0]
        masks.append((int(group_id), (group_ids == group_id) | (group_ids == parent_id)))
    return masks


def ancestor_masks(
    group_ids: torch.Tensor, parent_ids: torch.Tensor
) -> list[tuple[int, torch.Tensor]]:
    """A group with all its ancestors, padding skipped: what 0.5.21 builds from
    ``parse_prefix_tree_row``. ART's own is ``[(s.group_id, torch.isin(g,
    g.new_tensor((s.group_id, *s.ancestors)))) for s in parse_prefix_tree_row(...).segments]``."""
    parents = _parent_map(group_ids, parent_ids)
    return [
        (group, torch.isin(group_ids, torch.tensor(_lineage(group, parents))))
        for group in parents  # first-seen order, as parse_prefix_tree_row lists segments
    ]


def _parent_map(group_ids: torch.Tensor, parent_ids: torch.Tensor) -> dict[int, int]:
    parents: dict[int, int] = {}
    for group, parent in zip(group_ids.tolist(), parent_ids.tolist(), strict=True):
        if group != PAD_GROUP:
            parents.setdefault(group, parent)
    return parents


def _lineage(group: int, parents: dict[int, int]) -> list[int]:
    """The group and its ancestors up to the root (roots are their own parent)."""
    chain = [group]
    while parents[chain[-1]] != chain[-1]:
        chain.append(parents[chain[-1]])
    return chain


def expected_contexts(group_ids: torch.Tensor, parent_ids: torch.Tensor) -> dict[int, list[int]]:
    """Per group: the positions of the group and its ancestors, the datum it should be."""
    parents = _parent_map(group_ids, parent_ids)
    ids = group_ids.tolist()
    return {g: [pos for pos, gid in enumerate(ids) if gid in _lineage(g, parents)] for g in parents}


def datum_positions(masks: list[tuple[int, torch.Tensor]]) -> dict[int, list[int]]:
    """Which row positions each datum covers, keyed by the group the datum was built for."""
    return {group: torch.nonzero(mask).flatten().tolist() for group, mask in masks}


def scored_contexts(
    masks: list[tuple[int, torch.Tensor]],
    group_ids: torch.Tensor,
    parent_ids: torch.Tensor,
    assistant_mask: torch.Tensor,
) -> list[dict[str, Any]]:
    """For each trainable token, the context its logprob was computed in, and the right one.

    custom_loss_fn writes ``logprobs[mask] = lp`` in mask order, so the datum that scores
    position t is the last one covering it; its context is its positions up to t."""
    expected = expected_contexts(group_ids, parent_ids)
    ids = group_ids.tolist()
    rows = []
    for u in torch.nonzero(assistant_mask).flatten().tolist():
        t = u - 1  # the logprob at t predicts token u (loss.py L222 shifts the mask)
        writers = [mask for _, mask in masks if bool(mask[t])]
        got = (
            [p for p in torch.nonzero(writers[-1]).flatten().tolist() if p <= t] if writers else []
        )
        want = [p for p in expected[ids[t]] if p <= t]
        rows.append({"token": u, "context": got, "expected": want, "correct": got == want})
    return rows


def row_report(row: PackedRow, assistant_mask: torch.Tensor, mask_impl: MaskImpl) -> dict:
    """Masks, leakage and scoring contexts for one padded row, as plain data."""
    masks = mask_impl(row.group_ids, row.parent_ids)
    covered = datum_positions(masks)
    expected = expected_contexts(row.group_ids, row.parent_ids)
    valid = [p for p, g in enumerate(row.group_ids.tolist()) if g != PAD_GROUP]
    roots = [g for g, p in _parent_map(row.group_ids, row.parent_ids).items() if g == p]
    scored = scored_contexts(masks, row.group_ids, row.parent_ids, assistant_mask)
    return {
        "group_ids": row.group_ids.tolist(),
        "parent_ids": row.parent_ids.tolist(),
        "datums": covered,
        "expected": expected,
        "extra": {g: sorted(set(covered.get(g, [])) - set(expected[g])) for g in expected},
        "missing": {g: sorted(set(expected[g]) - set(covered.get(g, []))) for g in expected},
        "root_datum_covers_row": {r: covered.get(r) == valid for r in roots},
        "padding_datum": PAD_GROUP in covered,
        "trainable_tokens": len(scored),
        "wrong_context_tokens": sum(not s["correct"] for s in scored),
        "scored": scored,
    }


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
    optim_step_per_row: bool = True,
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
    optim_step_per_row: bool = True,
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


def build_report() -> _common.Report:
    """Item 9: Tinker per-datum masks and optimizer steps per packed row."""
    cited = measure()
    fixed = measure(audit_fix_masks, optim_step_per_row=False)
    chain = measure(ancestor_masks, optim_step_per_row=False)
    report = _common.Report(
        item="9",
        title="The legacy Tinker service builds the wrong per-datum masks and steps per packed row",
        models="art/tinker/service.py L136-L180; art/megatron/prefix_tree_packing.py L241-L260",
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
        f"{two['wrong_context_tokens']} of {two['trainable_tokens']}",
        fixed=f"{two_fixed['wrong_context_tokens']} of {two_fixed['trainable_tokens']}",
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
        f"{nested['wrong_context_tokens']} of {nested['trainable_tokens']}",
        fixed=f"{nested_fixed['wrong_context_tokens']} of {nested_fixed['trainable_tokens']}",
        note=(
            "with the group and all ancestors (0.5.21): "
            f"{chain['nested']['wrong_context_tokens']} of {chain['nested']['trainable_tokens']}"
        ),
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
            f"{'shared' if t['shared_segment'] else 'not shared'}, "
            f"{t['wrong_context_tokens']} of {t['trainable_tokens']}",
            fixed=f"{t_fixed['wrong_context_tokens']} of {t_fixed['trainable_tokens']}",
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


def _segment_groups(segment: Any) -> tuple[int, ...]:
    return (segment.group_id, *segment.ancestors)


_INLINE_MASK = '| (packed_tensors["parent_ids"][i] == parent_id)'


def check_art(art: Any) -> dict[str, Any]:
    """Claim by claim against ART's code in ``art`` (see artbot's verify): the masks are
    built with ART's own packing (and, where a release has it, its ``parse_prefix_tree_row``);
    the optimizer-step claim is read from ``TinkerService.train``'s source (AST), not run."""
    packing = art.load("megatron/prefix_tree_packing.py")
    service = art.source("tinker/service.py")
    ran = [f"{art.name}/megatron/prefix_tree_packing.py:prefix_tree_pack"]
    if "parse_prefix_tree_row(" in service:
        parse = art.load("megatron/prefix_tree.py").parse_prefix_tree_row

        def masks(group_ids: Any, parent_ids: Any) -> list[tuple[int, Any]]:
            # service.py selects, for each segment, the segment's group and its ancestors.
            row = parse(group_ids=group_ids, parent_ids=parent_ids)
            return [
                (
                    s.group_id,
                    torch.isin(group_ids, group_ids.new_tensor((s.group_id, *s.ancestors))),
                )
                for s in row.segments
            ]

        mask_impl: Any = masks
        how = "ART's parse_prefix_tree_row"
        ran.append(f"{art.name}/megatron/prefix_tree.py:parse_prefix_tree_row")
    elif _INLINE_MASK in service:
        mask_impl = tinker_datum_masks
        how = "this script's model of the inline mask expression found in tinker/service.py"
    else:
        raise RuntimeError(
            f"{art.name}/tinker/service.py builds its masks neither with the audited inline "
            "expression nor with parse_prefix_tree_row"
        )
    measured = measure(mask_impl, pack_impl=packing.prefix_tree_pack)
    two = measured["two_branch"]
    leaks = {g: v for g, v in two["extra"].items() if v}
    masks_detail = (
        f"two-branch row, masks from {how}: positions leaked into datums {leaks or 'none'}, "
        f"{two['wrong_context_tokens']} of {two['trainable_tokens']} trainable tokens in the "
        "wrong context"
    )
    per_row = optim_step_per_row(service)
    ran.append(f"{art.name}/tinker/service.py:TinkerService.train (source read, not run)")
    if per_row is None:
        step_detail = "TinkerService.train or its optim_step_async call not found in the source"
    else:
        where = "inside" if per_row else "outside"
        step_detail = f"optim_step_async {where} the per-row loop (AST of TinkerService.train)"
    return {
        "claims": {
            "wrong-per-datum-masks": (two["wrong_context_tokens"] > 0, masks_detail),
            "one-optimizer-step-per-packed-row": (per_row, step_detail),
        },
        "detail": f"{masks_detail}; {step_detail}",
        "ran": ran,
        "scope": "masks run on ART's packing; the optimizer step is read from the source",
    }


def main() -> int:
    return _common.run(build_report)


if __name__ == "__main__":
    raise SystemExit(main())


def optim_step_per_row(service_source: str) -> bool | None:
    """Claim ``one-optimizer-step-per-packed-row``, read from ART's tinker/service.py source by
    AST: True when ``TinkerService.train`` calls ``optim_step_async`` inside a ``for`` loop,
    False when it calls it outside every loop, None when it has no such method or call."""
    import ast

    for cls in ast.walk(ast.parse(service_source)):
        if not isinstance(cls, ast.ClassDef) or cls.name != "TinkerService":
            continue
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "train":
                return _optim_in_loop(fn, in_loop=False)
    return None


def _optim_in_loop(node: Any, *, in_loop: bool) -> bool | None:
    import ast

    found: bool | None = None
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested definition's calls are not the loop's
        if (
            isinstance(child, ast.Call)
            and isinstance(child.func, ast.Attribute)
            and child.func.attr == "optim_step_async"
        ):
            found = found or in_loop
        loop = in_loop or isinstance(child, (ast.For, ast.AsyncFor, ast.While))
        inner = _optim_in_loop(child, in_loop=loop)
        if inner is not None:
            found = bool(found) or inner
    return found
