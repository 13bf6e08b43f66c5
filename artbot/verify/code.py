"""Run each finding's own check against ART's code from one tree, and collect its claims.

The knowledge of *how* a finding is checked lives beside its reproduction: a repro that can be
run against ART defines ``check_art(art)``, where ``art`` is an :class:`ArtModules`
(``load(relpath)`` imports one ART file, ``source(relpath)`` reads one), returning::

    {"claims": {claim_id: (True | False | None, detail)},  # reproduced / fixed / not checked
     "detail": "one line of what was measured",
     "ran": ["art/loss.py:loss_fn", ...],                 # ART functions executed or read
     "scope": "what part was run, what was modelled or read" | None}

A claim may instead be a mapping that also says how it was reached and where (the fields of
:class:`artbot.status.ClaimResult`)::

    {"reproduced": True | False | None, "detail": "...",
     "method": "ran" | "read" | "modelled",
     "at": [{"path": "art/x.py", "line": 12, "end": 14, "look_for": "verbatim line"}]}

This module is generic: it loads the repro, opens the import context, calls the check,
validates what came back against the finding's claims, and derives the finding's verdict.
"""

from __future__ import annotations

import sys
import traceback
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from ..catalog import Catalog
from ..models import Finding
from ..scripts import import_script
from ..status import ClaimResult, ClaimVerdict, Verdict, derive
from .isolation import NotLoadedError
from .tree import ArtTree

CHECK_FUNCTION = "check_art"


class CodeStatus(StrEnum):
    reproduced = "reproduced"
    partial = "partial"
    fixed = "fixed"
    not_checked = "not checked"
    could_not_run = "could not run"


@dataclass(frozen=True)
class CodeResult:
    """One item's check, run against ART's own code from one tree."""

    item: int
    status: CodeStatus
    source: str
    detail: str
    claims: Mapping[str, ClaimResult] = field(default_factory=dict)
    ran: tuple[str, ...] = ()  # ART functions executed (or read), as art/<file>:<name>
    scope: str | None = None  # what part of the finding was run, modelled or read
    stand_ins: tuple[str, ...] = ()
    not_loaded: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "status": self.status.value,
            "source": self.source,
            "detail": self.detail,
            "claims": {k: v.model_dump(mode="json") for k, v in self.claims.items()},
            "ran": list(self.ran),
            "scope": self.scope,
            "stand_ins": list(self.stand_ins),
            "not_loaded": list(self.not_loaded),
        }


class CheckContractError(Exception):
    """A repro's check_art returned something other than the documented dict."""


def load_repro(path: Path) -> ModuleType:
    """Import a repro script by path, leaving ``sys.path`` and ``sys.modules`` as they were
    (its sibling helpers are this folder's, and whatever was loaded before is put back)."""
    name = f"_artbot_repro_{path.stem}"
    helpers = {p.stem for p in path.parent.glob("_*.py")}
    saved = {h: sys.modules.pop(h) for h in helpers if h in sys.modules}
    try:
        return import_script(path, name)
    finally:
        sys.modules.pop(name, None)
        for helper in helpers:
            sys.modules.pop(helper, None)
        sys.modules.update(saved)


def checkable(catalog: Catalog) -> list[Finding]:
    """Findings whose repro defines ``check_art`` (read from the source: nothing is run)."""
    out = []
    for finding in catalog.findings:
        script = catalog.root / finding.repro
        if script.is_file() and f"def {CHECK_FUNCTION}(" in script.read_text("utf-8"):
            out.append(finding)
    return out


def verify_code(catalog: Catalog, tree: ArtTree) -> list[CodeResult]:
    """Run each checkable finding's ``check_art`` against ART's own code from ``tree``."""
    return [run_check(catalog, tree, finding) for finding in checkable(catalog)]


def claim_results(finding: Finding, raw: Any) -> dict[str, ClaimResult]:
    """The check's claims, validated: exactly the finding's claim ids, each a (bool|None, str)."""
    if not isinstance(raw, Mapping):
        raise CheckContractError("check_art() must return a dict with 'claims'")
    wanted = [c.id for c in finding.claims]
    got = set(raw)
    if got != set(wanted):
        raise CheckContractError(
            f"check_art() reported claims {sorted(got)}, the record declares {sorted(wanted)}"
        )
    out: dict[str, ClaimResult] = {}
    for cid in wanted:
        value = raw[cid]
        extra: dict[str, Any] = {}
        if isinstance(value, Mapping):
            unknown = set(value) - {"reproduced", "detail", "method", "at"}
            if unknown or "reproduced" not in value:
                raise CheckContractError(
                    f"claim {cid}: expected reproduced, detail, method, at; got {sorted(value)}"
                )
            hit, detail = value["reproduced"], value.get("detail", "")
            extra = {k: value[k] for k in ("method", "at") if k in value}
        elif isinstance(value, tuple | list) and len(value) == 2:
            hit, detail = value
        else:
            raise CheckContractError(f"claim {cid}: expected (True|False|None, detail)")
        if hit is None:
            verdict = ClaimVerdict.not_checked
        elif isinstance(hit, bool):
            verdict = ClaimVerdict.reproduced if hit else ClaimVerdict.fixed
        else:
            raise CheckContractError(f"claim {cid}: verdict must be True, False or None")
        try:
            out[cid] = ClaimResult(verdict=verdict, detail=str(detail), **extra)
        except ValidationError as exc:
            raise CheckContractError(f"claim {cid}: {exc}") from exc
    return out


_STATUS = {
    Verdict.reproduced: CodeStatus.reproduced,
    Verdict.partial: CodeStatus.partial,
    Verdict.fixed: CodeStatus.fixed,
    Verdict.not_checked: CodeStatus.not_checked,
}


def run_check(catalog: Catalog, tree: ArtTree, finding: Finding) -> CodeResult:
    script = catalog.root / finding.repro
    art = tree.modules()

    def failed(why: str) -> CodeResult:
        return CodeResult(
            finding.item,
            CodeStatus.could_not_run,
            tree.label,
            why,
            stand_ins=tuple(sorted(art.stand_ins_used)),
            not_loaded=tuple(art.not_loaded),
        )

    if not script.is_file():
        return failed(f"{finding.repro} not found")
    try:
        repro = load_repro(script)
        check = getattr(repro, CHECK_FUNCTION, None)
        if check is None:
            return failed(f"{finding.repro} defines no {CHECK_FUNCTION}(art)")
        with art, warnings.catch_warnings():
            # ART warns where it skips work (0.5.21 skipping TIS); the measurement says it.
            warnings.simplefilter("ignore")
            outcome = check(art)
        claims = claim_results(finding, outcome.get("claims"))
    except CheckContractError as exc:
        return failed(f"{finding.repro}: {exc}")
    except ModuleNotFoundError as exc:
        name = exc.name or str(exc)
        if name == art.name or name.startswith(art.name + "."):
            why = f"missing module {name}: not in this tree"
        else:
            why = f"missing module {name}: not installed, and not one of the stand-ins"
        return failed(why + _where(exc, tree))
    except NotLoadedError as exc:
        return failed(str(exc) + _where(exc, tree))
    except SyntaxError as exc:
        return failed(
            f"{exc.filename}:{exc.lineno}: cannot be compiled by Python "
            f"{sys.version_info.major}.{sys.version_info.minor}: {exc.msg}"
        )
    except Exception as exc:  # an error inside ART or the repro is a result worth showing
        return failed(f"{type(exc).__name__}: {exc}{_where(exc, tree)}")
    verdict = derive([c.verdict for c in claims.values()])
    return CodeResult(
        finding.item,
        _STATUS[verdict],
        tree.label,
        str(outcome.get("detail", "")),
        claims=claims,
        ran=tuple(str(r) for r in outcome.get("ran", ())),
        scope=outcome.get("scope"),
        stand_ins=tuple(sorted(art.stand_ins_used)),
        not_loaded=tuple(art.not_loaded),
    )


def _where(exc: BaseException, tree: ArtTree) -> str:
    """`` (at art/x.py:N)`` for the innermost frame of the error inside ART's packages."""
    base = tree.package_dir.parent
    roots = [base / name for name in tree.packages]
    inside = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename and any(Path(frame.filename).is_relative_to(r) for r in roots)
    ]
    if not inside:
        return ""
    frame = inside[-1]
    return f" (at {Path(frame.filename).relative_to(base).as_posix()}:{frame.lineno})"


def code_table(results: Sequence[CodeResult], tree: ArtTree) -> str:
    """One block per item: status, each claim, the ART functions run, and what was measured."""
    out = [f"code against {tree.label}"]
    for r in results:
        out.append(f"item {r.item:>2}: {r.status.value}")
        for cid, claim in r.claims.items():
            why = f" ({claim.detail})" if claim.detail else ""
            out.append(f"  claim {cid}: {claim.verdict.value}{why}")
        if r.ran:
            out.append(f"  ran: {', '.join(r.ran)}")
        if r.scope:
            out.append(f"  scope: {r.scope}")
        out.append(f"  {r.detail}")
        if r.stand_ins:
            out.append(f"  stand-ins: {', '.join(r.stand_ins)}")
        if r.not_loaded:
            out.append(f"  named but not loaded: {len(r.not_loaded)} (package __init__ names)")
    return "\n".join(out)


def code_json(results: Sequence[CodeResult], tree: ArtTree) -> dict[str, Any]:
    return {
        "source": tree.label,
        "ran": not any(r.status is CodeStatus.could_not_run for r in results),
        "results": [r.as_json() for r in results],
    }
