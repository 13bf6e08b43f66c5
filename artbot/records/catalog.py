"""Load ``findings/*.yaml`` into a validated :class:`Catalog`, reporting every problem at once.

Each problem is located as ``path:line: field: message``. Line numbers come from the YAML
node tree (``yaml.compose``), so a pydantic error on ``confidence.level`` points at the line
where that value is written, and a missing field at the mapping that should hold it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import BadInput, CatalogInvalid, Problem
from ..jsonlimits import loads_limited
from ..repro.files import (
    MINIMAL_OUTPUTS,
    REGRESSION_OUTCOMES,
    json_or_empty,
    regression_strictness,
    regression_tests_by_item,
)
from ..repro.scripts import helper_imports
from ..status.dating import AnchorDating, load_dating
from .models import Audit, Finding
from .toolsource import ToolSource

AUDIT_FILE = "audit.yaml"
# A record is a few hundred nodes; these bounds stop a hostile file (a "billion laughs" of
# nested aliases, thousands of nested brackets) long before it costs time or stack.
MAX_NODES = 20_000
MAX_DEPTH = 64
M = TypeVar("M", bound=BaseModel)
# libyaml (in PyYAML's wheels) reads a record some 15 times faster than the pure-Python
# loader and gives the same nodes, tags and marks. A text it rejects is read again by the
# pure-Python loader, whose messages ("mapping values are not allowed here") are the ones
# reported.
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Catalog:
    """The validated audit and its findings, sorted by item number."""

    root: Path
    audit: Audit
    findings: tuple[Finding, ...]
    files: dict[int, str] = field(default_factory=dict)  # item -> path relative to root
    # Text of every repro script, of the helper modules they import and of the minimal repros
    # (repros/minimal/itemNN.py), read at load time so that rendering touches no files.
    sources: dict[str, str] = field(default_factory=dict)
    # artbot's repository and commit, for links to full scripts (resolved by the CLI before
    # rendering: artbot.records.toolsource); unknown by default, so the issues name paths unlinked.
    tool: ToolSource = field(default_factory=ToolSource)
    # Where the audit commit lies among the releases, from its anchors (findings/status/
    # anchors.json, written by `artbot verify --record`); None until a release was recorded.
    dating: AnchorDating | None = None
    # item -> its regression test for ART's own suite (repros/regression/test_itemNN_*.py).
    regression: dict[int, str] = field(default_factory=dict)
    # item -> False where its regression test is a non-strict xfail (the audit decides no fix).
    regression_strict: dict[int, bool] = field(default_factory=dict)
    # What artbot's run of each regression test on the newest release reported
    # (repros/regression/outcomes.json: {"release": ..., "outcomes": {file name: summary}}).
    regression_outcomes: dict[str, Any] = field(default_factory=dict)
    # What each minimal repro prints, as captured (repros/minimal/outputs.json: {"torch": its
    # version, "outputs": {name: stdout}}),
    # so the issue quotes the figures the pasted script prints.
    minimal_outputs: dict[str, Any] = field(default_factory=dict)

    def get(self, item: int) -> Finding:
        for f in self.findings:
            if f.item == item:
                return f
        known = ", ".join(str(f.item) for f in self.findings)
        raise BadInput(f"no finding with item {item} (known: {known})")

    def helpers(self, script: str) -> list[str]:
        """Paths of the ``repros/_*.py`` modules ``script`` imports, directly or through another."""
        folder = script.rsplit("/", 1)[0]
        found: list[str] = []
        todo = [script]
        while todo:
            for name in helper_imports(self.sources.get(todo.pop(), "")):
                path = f"{folder}/{name}.py"
                if path in self.sources and path not in found:
                    found.append(path)
                    todo.append(path)
        return found

    @property
    def items(self) -> list[int]:
        return [f.item for f in self.findings]

    def rows(self) -> list[dict[str, Any]]:
        """One row per finding as ``artbot list`` shows it: item, title, confidence, issue, file."""
        return [
            {
                "item": f.item,
                "title": f.title,
                "confidence": f.confidence.level.value,
                "issue": f.issue,
                "file": self.files[f.item],
            }
            for f in self.findings
        ]


def load_catalog(root: Path, *, tool: ToolSource | None = None) -> Catalog:
    """Load and validate ``root/findings``; raise :class:`CatalogInvalid` listing every problem.
    Everything rendering needs from disk is read here; ``tool`` says where artbot is hosted."""
    root = Path(root)
    findings_dir = root / "findings"
    problems: list[Problem] = []
    if not findings_dir.is_dir():
        raise CatalogInvalid([Problem("findings", None, "", "directory not found")])

    audit = _load_one(root, findings_dir / AUDIT_FILE, Audit, problems)
    loaded: list[tuple[str, Finding, yaml.Node]] = []
    for path in sorted(findings_dir.glob("*.yaml")):
        if path.name == AUDIT_FILE:
            continue
        result = _load_one_with_node(root, path, Finding, problems)
        if result is not None:
            loaded.append((_rel(root, path), *result))

    problems += _cross_checks(root, audit, loaded)
    if not loaded and not problems:
        problems.append(Problem("findings", None, "", "no finding records (*.yaml) found"))
    if problems or audit is None:
        raise CatalogInvalid(problems)

    ordered = sorted(loaded, key=lambda t: t[1].item)
    folders = {root / f.repro for _, f, _ in ordered}
    helpers = {h for p in folders for h in p.parent.glob("_*.py")}
    scripts = {f.repro for _, f, _ in ordered} | {_rel(root, h) for h in helpers}
    scripts |= {minimal_repro_path(f.item) for _, f, _ in ordered}
    regression = regression_tests_by_item(root)
    scripts |= set(regression.values())  # the issue shows a short one as its repro
    return Catalog(
        root=root,
        audit=audit,
        findings=tuple(f for _, f, _ in ordered),
        files={f.item: rel for rel, f, _ in ordered},
        sources={
            p: (root / p).read_text(encoding="utf-8") for p in scripts if (root / p).is_file()
        },
        dating=load_dating(root),
        tool=tool or ToolSource(),
        regression=regression,
        regression_strict=regression_strictness(root),
        regression_outcomes=json_or_empty(root / REGRESSION_OUTCOMES),
        minimal_outputs=json_or_empty(root / MINIMAL_OUTPUTS),
    )


def minimal_repro_path(item: int) -> str:
    """Where an item's self-contained repro lives (optional)."""
    return f"repros/minimal/item{item:02d}.py"


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _load_one(root: Path, path: Path, model: type[M], problems: list[Problem]) -> M | None:
    result = _load_one_with_node(root, path, model, problems)
    return None if result is None else result[0]


def _load_one_with_node(
    root: Path, path: Path, model: type[M], problems: list[Problem]
) -> tuple[M, yaml.Node] | None:
    rel = _rel(root, path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problems.append(Problem(rel, None, "", "file not found"))
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(rel, None, "", f"cannot read: {exc}"))
        return None
    too_deep = _nesting_too_deep(text)
    if too_deep is not None:
        problems.append(Problem(rel, too_deep, "", f"nested more than {MAX_DEPTH} levels deep"))
        return None
    try:
        node = _compose(text)
        size = _expanded_size(node)
        if size > MAX_NODES:
            problems.append(
                Problem(rel, 1, "", f"YAML aliases expand to more than {MAX_NODES:,} values")
            )
            return None
        data = _construct(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = f"column {mark.column + 1}: " if mark else ""
        problems.append(Problem(rel, line, "", f"YAML syntax error: {col}{exc.problem}"))
        return None
    except yaml.YAMLError as exc:
        problems.append(Problem(rel, None, "", f"YAML error: {_first_line(str(exc))}"))
        return None
    except (RecursionError, ValueError, TypeError, OverflowError) as exc:
        problems.append(Problem(rel, None, "", f"cannot load: {type(exc).__name__}"))
        return None
    if node is None or not isinstance(data, dict):
        problems.append(Problem(rel, 1, "", "expected a mapping of fields at the top level"))
        return None
    dupes = list(_duplicate_keys(node, ()))
    problems += [Problem(rel, line, f, "key appears more than once") for f, line in dupes]
    try:
        return model.model_validate(data), node
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            problems.append(Problem(rel, _line_for(node, loc), _dotted(loc), _message(err)))
        return None


def _compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        return yaml.compose(text, Loader=yaml.SafeLoader)


def _construct(node: yaml.Node | None) -> Any:
    """The data of an already composed document, as ``yaml.safe_load`` builds it, without
    parsing the text a second time."""
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _first_line(text: str) -> str:
    return (text.splitlines() or [""])[0][:200]


def _nesting_too_deep(text: str, loader: Any = _FAST_LOADER) -> int | None:
    """The line where ``text`` first nests deeper than :data:`MAX_DEPTH`, or None; read from
    the token stream (no recursion), before the recursive composer could exhaust the stack."""
    depth = 0
    opens = (
        yaml.BlockMappingStartToken,
        yaml.BlockSequenceStartToken,
        yaml.FlowMappingStartToken,
        yaml.FlowSequenceStartToken,
    )
    closes = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
    try:
        for token in yaml.scan(text, Loader=loader):
            if isinstance(token, opens):
                depth += 1
                if depth > MAX_DEPTH:
                    return int(token.start_mark.line) + 1
            elif isinstance(token, closes):
                depth -= 1
    except yaml.YAMLError:
        # libyaml reads ahead, and stops at its own depth limit (1,000) before handing back
        # the token that crossed ours: the pure-Python scanner says where that was.
        return None if loader is yaml.SafeLoader else _nesting_too_deep(text, yaml.SafeLoader)
    return None


def _expanded_size(root: yaml.Node | None) -> int:
    """How many values ``root`` stands for with every alias expanded, without expanding (sizes
    memoised per node; cycles, which SafeLoader cannot build into data, count as too large)."""
    if root is None:
        return 0
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            sizes[key] = min(MAX_NODES + 1, 1 + sum(sizes[id(c)] for c in children))
            continue
        if key in sizes:
            continue
        if key in on_path:
            return MAX_NODES + 1
        on_path.add(key)
        stack.append((node, True))
        stack += [(c, False) for c in children if id(c) not in sizes]
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    msg: str = err["msg"]
    return msg.removeprefix("Value error, ")


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _line_for(node: yaml.Node, loc: tuple[Any, ...]) -> int:
    """Best line for an error at ``loc``: the value's line, or its parent's for a missing key."""
    current = node
    for part in loc:
        child = _child(current, part)
        if child is None:
            break
        current = child
    return current.start_mark.line + 1


def _child(node: yaml.Node, part: Any) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == str(part):
                # An unknown or scalar-valued key is best shown on its own line.
                return value if not isinstance(value, yaml.ScalarNode) else key
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part]
    return None


def _duplicate_keys(
    node: yaml.Node, path: tuple[str, ...], visited: set[int] | None = None
) -> Iterable[tuple[str, int]]:
    """Keys written twice in one mapping. Each node is walked once: an alias is not expanded."""
    visited = set() if visited is None else visited
    if id(node) in visited:
        return
    visited.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            label = str(key.value) if isinstance(key, yaml.ScalarNode) else "<complex key>"
            name = ".".join((*path, label))
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    yield name, key.start_mark.line + 1
                seen.add(key.value)
            yield from _duplicate_keys(value, (*path, label), visited)
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            yield from _duplicate_keys(
                value, (*path[:-1], f"{path[-1]}[{i}]") if path else (), visited
            )


def _cross_checks(
    root: Path, audit: Audit | None, loaded: list[tuple[str, Finding, yaml.Node]]
) -> list[Problem]:
    problems: list[Problem] = []
    first_file: dict[int, str] = {}
    for rel, finding, node in loaded:
        found: list[tuple[tuple[Any, ...], str]] = []  # (where in the record, what is wrong)
        if finding.item in first_file:
            found.append(
                (("item",), f"item {finding.item} is already defined in {first_file[finding.item]}")
            )
        else:
            first_file[finding.item] = rel
        if not (root / finding.repro).is_file():
            found.append((("repro",), f"{finding.repro} does not exist"))
        if finding.follows is not None and not any(
            f.item == finding.follows and not f.is_follow_up for _, f, _ in loaded
        ):
            why = f"no audit item {finding.follows} in the catalog for this follow-up to follow"
            found.append((("follows",), why))
        if audit is not None and audit.label_definitions:  # none at all: default colours
            for i, label in enumerate(finding.labels):
                if label not in audit.label_definitions:
                    why = f"{label!r} has no entry in {AUDIT_FILE}'s label_definitions"
                    found.append((("labels", i), why))
        if audit is not None:
            src = audit.source_root.rstrip("/") + "/"
            for i, location in enumerate(finding.locations):
                if not location.path.startswith(src) or ".." in location.path.split("/"):
                    why = f"{location.path} is outside the audited source root {src}"
                    found.append((("locations", i, "path"), why))
        problems += [Problem(rel, _line_for(node, loc), _dotted(loc), why) for loc, why in found]
        problems += _claim_checks(root, rel, finding, node)
    return problems


def _claim_checks(root: Path, rel: str, finding: Finding, node: yaml.Node) -> list[Problem]:
    """Claim ids unique in the record, and the ids its stored result reports equal to them."""
    problems: list[Problem] = []
    ids = [c.id for c in finding.claims]
    line = _line_for(node, ("claims",))
    if len(set(ids)) != len(ids):
        problems.append(Problem(rel, line, "claims", f"duplicate claim ids in {ids}"))
    result = root / "findings" / "results" / f"{finding.item:02d}.json"
    if not result.is_file():
        return problems
    try:
        reported = loads_limited(result.read_bytes().decode("utf-8")).get("claims") or {}
    except (ValueError, AttributeError):
        return problems  # a result that cannot be read is the runner's concern, not the record's
    if reported and set(reported) != set(ids):
        problems.append(
            Problem(
                rel,
                line,
                "claims",
                f"{_rel(root, result)} reports claims {sorted(reported)}, the record has "
                f"{sorted(ids)}",
            )
        )
    return problems
