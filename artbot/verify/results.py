"""The check process's results, validated in artbot's process: what the child reports is
the release's code's to write, so nothing of it is taken on its word.

Each result is validated field by field into a :class:`.code.CodeResult` (unknown items
dropped, a claim the record does not declare refused); every text goes through the one
sanitizer (:mod:`.sanitize`); lists are capped; and every source line a claim cites (``at``,
``fix``) is checked again here against the release on disk (the child checked it too, but in
the process the release's code controls), at most :data:`MAX_LINES` of each per claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .code import CodeResult, CodeStatus, SourceReader, line_problem, tree_reader
from .limits import capped_tapes
from .sanitize import shown
from .tree import ArtTree

MAX_RAN = 40  # ART functions a result may say it ran (the checks name at most a few)


def _text(value: Any, name: str, secrets: Sequence[str], *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} is not text")
    return shown(value, secrets)


def _texts(value: Any, name: str, secrets: Sequence[str], cap: int = 200) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > cap:
        raise TypeError(f"{name} is not a list of text")
    return tuple(str(_text(v, name, secrets)) for v in value)


def parse_results(
    data: Any, wanted: Mapping[int, set[str]], tree: ArtTree, secrets: Sequence[str] = ()
) -> list[CodeResult]:
    """The child's JSON as :class:`CodeResult` objects, one per ``wanted`` item (item ->
    its declared claim ids), in order; a result claiming other ids is "could not run"."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise TypeError("expected {'results': [...]}")
    got: dict[int, CodeResult] = {}
    read = tree_reader(tree)
    for entry in data["results"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("item"), int):
            raise TypeError("a result without an item number")
        item = entry["item"]
        if item not in wanted or item in got:
            continue
        got[item] = result_from_json(entry, wanted[item], tree.label, secrets, read)
    missing = "the check process reported no result for this item"
    return [
        got.get(i) or CodeResult(i, CodeStatus.could_not_run, tree.label, missing) for i in wanted
    ]


def result_from_json(
    entry: Mapping[str, Any],
    declared: set[str],
    label: str,
    secrets: Sequence[str] = (),
    read: SourceReader | None = None,
) -> CodeResult:
    """One item's result (``CodeResult.as_json``'s shape) validated: only ``declared`` claim
    ids, every text sanitized, lists capped; with ``read`` (the release's files), every line
    a claim cites checked again. Raises TypeError or ValueError when it is not valid."""
    from ..status import ClaimResult

    item = entry.get("item")
    if not isinstance(item, int):
        raise TypeError("a result without an item number")
    claims_raw = entry.get("claims") or {}
    if not isinstance(claims_raw, dict):
        raise TypeError(f"item {item}: claims is not an object")
    if not set(claims_raw) <= declared:
        raise TypeError(f"item {item}: claims the record does not declare")
    claims = {}
    for cid, claim in claims_raw.items():
        result = ClaimResult.model_validate(claim)
        if read is not None:
            _recheck(result, item, cid, read)
        claims[cid] = _sanitized(result, secrets)
    return CodeResult(
        item,
        CodeStatus(entry["status"]),
        label,
        str(_text(entry.get("detail", ""), "detail", secrets)),
        claims=claims,
        ran=_texts(entry.get("ran", []), "ran", secrets, MAX_RAN),
        scope=_text(entry.get("scope"), "scope", secrets, optional=True),
        stand_ins=_texts(entry.get("stand_ins", []), "stand_ins", secrets),
        not_loaded=_texts(entry.get("not_loaded", []), "not_loaded", secrets),
        # What the check measured, judged again by artbot (.rejudge), capped; never a verdict.
        tapes={k: v for k, v in capped_tapes(entry.get("tapes")).items() if k in declared},
    )


MAX_LINES = 8  # source lines a claim may cite (at, and fix); the checks cite at most 3


def _recheck(result: Any, item: int, cid: str, read: SourceReader) -> None:
    """What the child says a claim rests on, checked again here against the release: at most
    :data:`MAX_LINES` lines each of ``at`` and ``fix``, each a line the release holds where it
    says (the child's own check of it ran in the process the release's code controls)."""
    fix = result.fix.lines if result.fix is not None else []
    for label, lines in (("at", result.at), ("fix", fix)):
        if len(lines) > MAX_LINES:
            raise TypeError(
                f"item {item}: claim {cid} cites {len(lines)} {label} lines, over {MAX_LINES}"
            )
        for line in lines:
            if line_problem(line, read) is not None:
                raise TypeError(f"item {item}: claim {cid} cites a line the release does not hold")


def _sanitized(result: Any, secrets: Sequence[str]) -> Any:
    """A claim's result with every text of the child's through the sanitizer: its detail, the
    lines it cites (``look_for``), its domain's words."""
    update: dict[str, Any] = {"detail": shown(result.detail, secrets)}

    def lines(found: Any) -> list[Any]:
        return [ln.model_copy(update={"look_for": shown(ln.look_for, secrets)}) for ln in found]

    update["at"] = lines(result.at)
    if result.fix is not None:
        update["fix"] = result.fix.model_copy(update={"lines": lines(result.fix.lines)})
    if result.domain is not None:
        domain: dict[str, Any] = {"covers": shown(result.domain.covers, secrets)}
        ce = result.domain.counterexample
        if ce is not None:
            text = lambda v: shown(v, secrets) if isinstance(v, str) else v  # noqa: E731
            domain["counterexample"] = ce.model_copy(
                update={
                    "inputs": {shown(k, secrets): text(v) for k, v in ce.inputs.items()},
                    "measured": text(ce.measured),
                    "bound": text(ce.bound),
                }
            )
        update["domain"] = result.domain.model_copy(update=domain)
    return result.model_copy(update=update)
