"""Item 9's model of ART's prefix-tree rows and of the Tinker service's per-datum masks.

Kept apart from ``item09_tinker_masks`` (which re-exports every name) so that each file stays
readable: the packer model (``prefix_tree_pack``, checked against ART's own in
tests/repros/test_art_models.py), the mask constructions (the audited one, the audit's fix,
0.5.21's ancestors), which context each trainable token is scored in, and the AST reading of
``TinkerService.train``'s optimizer step.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

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


def _per_group(
    group_ids: torch.Tensor, parent_ids: torch.Tensor, side: torch.Tensor
) -> list[tuple[int, torch.Tensor]]:
    """``(group == g) | (side == parent(g))`` per unique group g."""
    masks = []
    for group_id in group_ids.unique():  # sorted, so the padding group -1 comes first
        parent_id = parent_ids[group_ids == group_id][0]
        masks.append((int(group_id), (group_ids == group_id) | (side == parent_id)))
    return masks


def tinker_datum_masks(
    group_ids: torch.Tensor, parent_ids: torch.Tensor
) -> list[tuple[int, torch.Tensor]]:
    """Model of service.py L137-L146: ``(group == g) | (parent == parent(g))`` per unique group."""
    return _per_group(group_ids, parent_ids, parent_ids)


def audit_fix_masks(
    group_ids: torch.Tensor, parent_ids: torch.Tensor
) -> list[tuple[int, torch.Tensor]]:
    """The audit's suggested fix, in the same loop: ``(group == g) | (group == parent(g))``."""
    return _per_group(group_ids, parent_ids, group_ids)


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


def optim_step_per_row(service_source: str) -> bool | None:
    """Claim ``one-optimizer-step-per-packed-row``, read from ART's tinker/service.py source by
    AST: True when ``TinkerService.train`` calls ``optim_step_async`` inside a ``for`` loop,
    False when it calls it outside every loop, None when it has no such method or call."""
    for cls in ast.walk(ast.parse(service_source)):
        if not isinstance(cls, ast.ClassDef) or cls.name != "TinkerService":
            continue
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "train":
                return _optim_in_loop(fn, in_loop=False)
    return None


def _optim_in_loop(node: Any, *, in_loop: bool) -> bool | None:
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
