"""What the check job hands the post job: each answer as structured fields, never as text.

The check job runs the patch's code (confined), so the post job, which holds the write token,
trusts nothing of what it hands over (``answers.json``, an artifact any step of that job could
rewrite): each entry is validated field by field here (:func:`load_answers`; one that is not
valid is dropped and said, never the whole file), every text goes through the one sanitizer
and is capped, a result's claims are only those the record declares, and the post job renders
the text itself (:mod:`.respond`), from these fields and from its own fresh read of GitHub.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..records.catalog import Catalog
from ..verify.code import CodeResult
from ..verify.rejudge import BY_ARTBOT, IN_CHECK
from ..verify.results import result_from_json
from ..verify.sanitize import shown
from .command import MAX_FILES
from .probes import MAX_TEXT, Probe, ProbeKind
from .regress import Regression
from .trial import Trial

# What the check made of a "run" task: a trial, a refusal (the patch does not apply, ...),
# or a trial that ran over its share of the run's time budget.
CHECKED = ("trial", "refusal", "timed out")
PLANNED = ("refuse", "repeat", "busy")  # the plan's own answers (the post job re-plans them)
OUTCOMES = ("passed", "failed", "error", "could not run")
_PATH_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,199}$")
_HEX_RE = re.compile(r"^[0-9a-f]{40}$")
_WHEN_RE = re.compile(r"^[0-9TZ:+.-]{1,40}$")
MAX_REASON = 600
MAX_PROBES = 50  # a trial's probes handed over (the answer shows 5 and counts the rest)


@dataclass(frozen=True)
class Answer:
    """One answer, as the check job hands it over: which request (issue, comment, its edit
    and its request key), what the check made of it, and the fields the post job renders."""

    issue: int
    comment_id: int
    updated_at: str
    request: str
    kind: str  # one of CHECKED or PLANNED
    reason: str = ""  # a refusal's
    trial: Mapping[str, Any] | None = None  # trial_json(...)
    head: str | None = None  # the pull request's head commit the patch was taken from
    seconds: float = 0.0  # a timed-out trial's


def trial_json(trial: Trial) -> dict[str, Any]:
    """``trial`` as plain data (the fields :func:`trial_from_json` reads back)."""

    def regression(r: Regression | None) -> dict[str, Any] | None:
        return None if r is None else {"test": r.test, "outcome": r.outcome,
                                       "detail": r.detail, "seconds": r.seconds}  # fmt: skip

    return {
        "item": trial.item,
        "changed": list(trial.changed),
        "before": trial.before.as_json(),
        "after": trial.after.as_json(),
        "regression_before": regression(trial.regression_before),
        "regression_after": regression(trial.regression_after),
        "isolation": trial.isolation,
        "seconds": trial.seconds,
        "timings": dict(trial.timings),
        "probes": [
            {"path": p.path, "line": p.line, "kind": p.kind.name, "text": p.text}
            for p in trial.probes[:MAX_PROBES]
        ],
    }


def _probes(data: Any, changed: list[str]) -> tuple[Probe, ...]:
    """The probes handed over: each kind one of the enum's, its path one of the files the
    patch changed, its line an int, its text sanitized and capped."""
    if data is None:
        return ()
    if not isinstance(data, list) or len(data) > MAX_PROBES:
        raise ValueError("probes: not a list of probes")
    out = []
    for entry in data:
        if not isinstance(entry, dict) or set(entry) != {"path", "line", "kind", "text"}:
            raise ValueError("probes: not a probe's fields")
        path, line, kind = entry["path"], entry["line"], entry["kind"]
        if not isinstance(path, str) or path.removeprefix("src/") not in changed:
            raise ValueError("probes: not a file the patch changed")
        if isinstance(line, bool) or not isinstance(line, int) or not 0 < line < 10**7:
            raise ValueError("probes: not a line")
        if kind not in ProbeKind.__members__:
            raise ValueError("probes: not a kind")
        text = shown(str(entry["text"]), limit=MAX_TEXT)
        out.append(Probe(path, line, ProbeKind[kind], text))
    return tuple(out)


def _seconds(value: Any) -> float:
    if not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value < 1e5:
        raise ValueError("not a duration")
    return float(value)


def _regression(data: Any) -> Regression | None:
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("outcome") not in OUTCOMES:
        raise ValueError("not a regression test's outcome")
    test = str(data.get("test", ""))
    if not re.fullmatch(r"test_item\d{1,5}\w{0,80}\.py", test):
        raise ValueError("not a regression test's name")
    detail = shown(str(data.get("detail", "")), limit=300)
    return Regression(test, data["outcome"], detail, _seconds(data.get("seconds")))


def trial_from_json(
    data: Mapping[str, Any], catalog: Catalog, *, item: int, release: str, source: str
) -> Trial:
    """A trial handed over, validated against the request it answers (``item``,
    ``release``, ``source``: the post job's own, from its fresh read) and the record (the
    claims item ``item`` declares). Raises ValueError or TypeError when it is not valid."""
    if data.get("item") != item:
        raise ValueError(f"a trial of another item than {item}")
    declared = {c.id for c in catalog.get(item).claims}
    label = f"openpipe-art {release}"

    def result(key: str) -> CodeResult:
        entry = data.get(key)
        if not isinstance(entry, dict) or entry.get("item") != item:
            raise ValueError(f"{key}: not a result of item {item}")
        return _judged(entry, result_from_json(entry, declared, label))

    changed = data.get("changed")
    if not isinstance(changed, list) or not 0 < len(changed) <= MAX_FILES:
        raise ValueError("changed: not a list of files")
    if not all(isinstance(p, str) and _PATH_RE.match(p) and ".." not in p for p in changed):
        raise ValueError("changed: not a path")
    timings = data.get("timings")
    if not isinstance(timings, dict) or len(timings) > 4:
        raise ValueError("timings: not a few durations")
    words = ("check the release", "check the patched tree", "regression test the release",
             "regression test the patched tree")  # fmt: skip
    if not set(timings) <= set(words):
        raise ValueError("timings: unknown steps")
    return Trial(
        item,
        release,
        source,
        tuple(changed),
        result("before"),
        result("after"),
        _regression(data.get("regression_before")),
        _regression(data.get("regression_after")),
        shown(str(data.get("isolation", "")), limit=600),
        _seconds(data.get("seconds")),
        {k: _seconds(timings[k]) for k in words if k in timings},
        _probes(data.get("probes"), changed),
    )


def _judged(entry: Mapping[str, Any], result: CodeResult) -> CodeResult:
    """Who judged each claim and artbot's seed, as the check job's artbot said (never the
    check process's: the check job judged its tape again, .rejudge); only declared claims."""
    judged, seed = entry.get("judged") or {}, entry.get("seed")
    if not isinstance(judged, dict) or not set(judged) <= set(result.claims):
        raise ValueError("judged: not the result's claims")
    if not all(who in (BY_ARTBOT, IN_CHECK) for who in judged.values()):
        raise ValueError("judged: not who judged")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError("seed: not a seed")
    return replace(result, judged=dict(judged), seed=seed)


def answer_from_json(entry: Any) -> Answer:
    """One entry of ``answers.json``, its fields checked (not yet against GitHub)."""
    if not isinstance(entry, dict) or set(entry) - set(Answer.__dataclass_fields__):
        raise ValueError("not an answer's fields")
    issue, cid, when = entry.get("issue"), entry.get("comment_id"), entry.get("updated_at")
    if not (isinstance(issue, int) and isinstance(cid, int) and isinstance(when, str)):
        raise ValueError("not an answer's request")
    if not _WHEN_RE.match(when) or not re.fullmatch(r"[0-9a-f]{16}", str(entry.get("request"))):
        raise ValueError("not an answer's request")
    kind = entry.get("kind")
    if kind not in (*CHECKED, *PLANNED):
        raise ValueError("not an answer's kind")
    head = entry.get("head")
    if head is not None and not (isinstance(head, str) and _HEX_RE.match(head)):
        raise ValueError("head: not a commit")
    trial = entry.get("trial")
    if (kind == "trial") != isinstance(trial, dict):
        raise ValueError("a trial answer without its trial")
    return Answer(
        issue, cid, when, str(entry["request"]), str(kind),
        reason=shown(str(entry.get("reason", "")), limit=MAX_REASON),
        trial=trial, head=head, seconds=_seconds(entry.get("seconds", 0.0)),
    )  # fmt: skip


def load_answers(path: Path, say: Callable[[str], None] | None = None) -> list[Answer]:
    """``answers.json``'s valid entries; each one that is not valid is said and dropped."""
    try:
        data = json.loads(path.read_bytes()[: 8 << 20])
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: {type(exc).__name__}") from None
    if not isinstance(data, list):
        raise BadInput(f"{path}: expected a list of answers")
    out = []
    for n, entry in enumerate(data[:100]):
        try:
            out.append(answer_from_json(entry))
        except (ValueError, TypeError, KeyError) as exc:
            if say is not None:
                say(f"answer-tests: {path.name} entry {n} dropped: {str(exc)[:120]}")
    return out
