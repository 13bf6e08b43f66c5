"""Run each finding's own check against ART's code from one tree, and collect its claims.

The knowledge of *how* a finding is checked lives beside its reproduction: a repro that can be
run against ART defines ``check_art(art)``, where ``art`` is an :class:`ArtModules`
(``load(relpath)`` imports one ART file, ``source(relpath)`` reads one), returning::

    {"claims": {claim_id: (True | False | None, detail) | {...}},  # reproduced/fixed/not checked
     "detail": "one line of what was measured",
     "method": "ran" | "read" | "modelled",              # optional: each claim's, unless it says
     "ran": ["art/loss.py:loss_fn", ...],                 # ART functions executed or read
     "scope": "what part was run, what was modelled or read" | None}  # optional

A claim is either the pair ``(verdict, detail)`` or a dict with the evidence of the verdict
(``repros/_evidence.py`` builds these from lines it finds in the release)::

    {"verdict": True | False | None, "detail": "...",
     "method": "ran" | "read" | "modelled",   # ART's function run / its source read / a model
     "at": [SourceLine, ...],                 # where the claim's code is in this release
     "fix": {"lines": [SourceLine, ...]}}     # fixed verdicts only: the lines that fix it

with ``SourceLine = {"path": "art/loss.py", "line": 388, "end": 395, "look_for": "..."}``
(:class:`artbot.status.SourceLine`, the wheel's layout). Every line is checked against the
release: the file exists, the range is inside it and ``look_for`` is a line in the range
(stripped, verbatim); a ``read`` verdict states at least one ``at`` line. The upstream change
behind a fix is not a check's to say: ``artbot verify changes`` asks GitHub for it.

This module is generic: it loads the repro, opens the import context, calls the check,
validates what came back against the finding's claims, and derives the finding's verdict.
"""

from __future__ import annotations

import sys
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from ..records.catalog import Catalog
from ..records.models import Finding
from ..repro.scripts import import_script
from ..status import (
    ClaimResult,
    ClaimVerdict,
    Domain,
    FixEvidence,
    Method,
    SourceLine,
    Verdict,
    derive,
)
from .isolation import NotLoadedError
from .limits import capped_tapes, hit
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
    # The split (issue #53, :mod:`.rejudge`): what the check measured, per claim (``{"case",
    # "raw"}`` entries, JSON), which artbot judges again; who judged each claim; artbot's seed.
    tapes: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    judged: Mapping[str, str] = field(default_factory=dict)
    seed: int | None = None

    def as_json(self, *, tapes: bool = False) -> dict[str, Any]:
        """The result as JSON; with ``tapes`` (the check process's, to artbot) its tapes too."""
        out = self._json()
        if tapes:
            out["tapes"] = {k: list(v) for k, v in self.tapes.items()}
        elif self.judged:
            out["judged"] = dict(self.judged)
            out["seed"] = self.seed
        return out

    def _json(self) -> dict[str, Any]:
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


def claim_results(
    finding: Finding, raw: Any, *, method: Any = None, source: SourceReader | None = None
) -> dict[str, ClaimResult]:
    """The check's claims, validated: exactly the finding's claim ids, each a (bool|None, str)
    pair or a dict with the verdict's evidence (see the module's docstring). ``method`` is the
    check's default; ``source(relpath)`` reads the checked tree, to check every cited line."""
    if not isinstance(raw, Mapping):
        raise CheckContractError("check_art() must return a dict with 'claims'")
    wanted = [c.id for c in finding.claims]
    got = set(raw)
    if got != set(wanted):
        raise CheckContractError(
            f"check_art() reported claims {sorted(got)}, the record declares {sorted(wanted)}"
        )
    return {cid: _claim(cid, raw[cid], method, source) for cid in wanted}


SourceReader = Callable[[str], str | None]
_CLAIM_KEYS = {"verdict", "detail", "method", "at", "fix", "domain"}


def _claim(cid: str, value: Any, default_method: Any, source: SourceReader | None) -> ClaimResult:
    if isinstance(value, tuple | list) and len(value) == 2:
        value = {"verdict": value[0], "detail": value[1]}
    if not isinstance(value, Mapping) or "verdict" not in value:
        raise CheckContractError(f"claim {cid}: expected (True|False|None, detail) or a dict")
    if unknown := set(value) - _CLAIM_KEYS:
        raise CheckContractError(f"claim {cid}: unknown keys {sorted(unknown)}")
    hit = value["verdict"]
    if hit is None:
        verdict = ClaimVerdict.not_checked
    elif isinstance(hit, bool):
        verdict = ClaimVerdict.reproduced if hit else ClaimVerdict.fixed
    else:
        raise CheckContractError(f"claim {cid}: verdict must be True, False or None")
    method = value.get("method", default_method)
    fix = value.get("fix")
    if fix is not None and verdict is not ClaimVerdict.fixed:
        raise CheckContractError(f"claim {cid}: fix evidence on a {verdict.value} verdict")
    if isinstance(fix, Mapping) and "change" in fix:
        raise CheckContractError(f"claim {cid}: the change is `artbot verify changes`'s to record")
    try:
        result = ClaimResult(
            verdict=verdict,
            detail=str(value.get("detail", "")),
            method=Method(method) if method is not None and hit is not None else None,
            at=value.get("at") or [],
            fix=FixEvidence.model_validate(fix) if fix is not None else None,
            domain=Domain.model_validate(value["domain"]) if value.get("domain") else None,
        )
    except ValueError as exc:  # pydantic's ValidationError, or an unknown method
        raise CheckContractError(f"claim {cid}: {exc}") from exc
    if result.method is Method.read and not result.at:
        raise CheckContractError(f"claim {cid}: a read verdict states the lines it read (at)")
    if source is not None:
        for line in [*result.at, *(result.fix.lines if result.fix else [])]:
            if problem := line_problem(line, source):
                raise CheckContractError(f"claim {cid}: {problem}")
    return result


def line_problem(line: SourceLine, source: SourceReader) -> str | None:
    """Why ``line`` does not hold in the checked tree, or None when it does."""
    where = f"{line.path}:{line.line}"
    text = source(line.path)
    if not text:
        return f"{where}: no such file in the checked code"
    lines = text.splitlines()
    end = line.end or line.line
    if end < line.line or end > len(lines):
        return f"{where}-{end}: outside the file ({len(lines)} lines)"
    wanted = line.look_for.strip()
    if wanted and all(lines[n].strip() != wanted for n in range(line.line - 1, end)):
        return f"{where}-{end}: {wanted!r} is not a line there"
    return None


_STATUS = {
    Verdict.reproduced: CodeStatus.reproduced,
    Verdict.partial: CodeStatus.partial,
    Verdict.fixed: CodeStatus.fixed,
    Verdict.not_checked: CodeStatus.not_checked,
}


def run_check(
    catalog: Catalog,
    tree: ArtTree,
    finding: Finding,
    plan: Mapping[str, list[Any]] | None = None,
) -> CodeResult:
    """The finding's check on ``tree``, measuring the inputs artbot drew (``plan``: claim ->
    cases) where given; its tape comes back with the result, for artbot to judge."""
    script = catalog.root / finding.repro
    art = tree.modules()
    art.plan = {str(k): list(v) for k, v in (plan or {}).items()}

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
        if not isinstance(outcome, Mapping):
            raise CheckContractError("check_art() must return a dict")
        claims = claim_results(
            finding, outcome.get("claims"), method=outcome.get("method"), source=tree_reader(tree)
        )
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
        if hit(exc) is not None:
            raise  # a cap on the check process: the whole run stops, naming it
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
        tapes=capped_tapes(art.tape),
    )


def tree_reader(tree: ArtTree) -> SourceReader:
    """``art/x.py`` (the wheel's layout) read from the files the check imported: the tree's
    packages on disk (``art/``, and those shipped beside it)."""
    base = tree.package_dir.parent
    roots = {tree.package_dir.name, *tree.packages}

    def read(path: str) -> str | None:
        parts = path.split("/")
        file = base.joinpath(*parts)
        if parts[0] not in roots or ".." in parts or not file.is_file():
            return None
        return file.read_text(encoding="utf-8")

    return read


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
            how = f" [{claim.method.value}]" if claim.method else ""
            out.append(f"  claim {cid}: {claim.verdict.value}{how}{why}")
            if claim.domain is not None:
                out.append(f"    {domain_line(claim.domain)}")
            for label, lines in (("at", claim.at), ("fix", claim.fix.lines if claim.fix else [])):
                for line in lines:
                    span = (
                        f"{line.line}-{line.end}"
                        if line.end and line.end != line.line
                        else line.line
                    )
                    out.append(f"    {label} {line.path}:{span}  {line.look_for}")
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


def domain_line(domain: Domain) -> str:
    """``over 300 inputs (shapes ..., dtypes ...; 1.2 s)``, then the counterexample."""
    line = f"over {domain.inputs} inputs ({domain.covers}; {domain.seconds:.1f} s)"
    if domain.counterexample is not None:
        ce = domain.counterexample
        given = ", ".join(f"{k}={v}" for k, v in ce.inputs.items())
        line += f"; counterexample: {given}: measured {ce.measured}, bound {ce.bound}"
    return line


def code_json(
    results: Sequence[CodeResult], tree: ArtTree, *, tapes: bool = False
) -> dict[str, Any]:
    return {
        "source": tree.label,
        "ran": not any(r.status is CodeStatus.could_not_run for r in results),
        "results": [r.as_json(tapes=tapes) for r in results],
    }
