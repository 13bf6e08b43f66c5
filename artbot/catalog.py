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

from .errors import BadInput, CatalogInvalid, Problem
from .models import Audit, Finding
from .scripts import helper_imports

AUDIT_FILE = "audit.yaml"
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Catalog:
    """The validated audit and its findings, sorted by item number."""

    root: Path
    audit: Audit
    findings: tuple[Finding, ...]
    files: dict[int, str] = field(default_factory=dict)  # item -> path relative to root
    # Text of every repro script and of the helper modules they import, read at load time so
    # that rendering touches no files.
    sources: dict[str, str] = field(default_factory=dict)

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


def load_catalog(root: Path) -> Catalog:
    """Load and validate ``root/findings``; raise :class:`CatalogInvalid` listing every problem."""
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
    return Catalog(
        root=root,
        audit=audit,
        findings=tuple(f for _, f, _ in ordered),
        files={f.item: rel for rel, f, _ in ordered},
        sources={
            p: (root / p).read_text(encoding="utf-8") for p in scripts if (root / p).is_file()
        },
    )


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
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = f"column {mark.column + 1}: " if mark else ""
        problems.append(Problem(rel, line, "", f"YAML syntax error: {col}{exc.problem}"))
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
            problems.append(
                Problem(rel, _line_for(node, loc, err["type"]), _dotted(loc), _message(err))
            )
        return None


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


def _line_for(node: yaml.Node, loc: tuple[Any, ...], kind: str) -> int:
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


def _duplicate_keys(node: yaml.Node, path: tuple[str, ...]) -> Iterable[tuple[str, int]]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = ".".join((*path, str(key.value)))
            if key.value in seen:
                yield name, key.start_mark.line + 1
            seen.add(key.value)
            yield from _duplicate_keys(value, (*path, str(key.value)))
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            yield from _duplicate_keys(value, (*path[:-1], f"{path[-1]}[{i}]") if path else ())


def _cross_checks(
    root: Path, audit: Audit | None, loaded: list[tuple[str, Finding, yaml.Node]]
) -> list[Problem]:
    problems: list[Problem] = []
    first_file: dict[int, str] = {}
    for rel, finding, node in loaded:
        if finding.item in first_file:
            problems.append(
                Problem(
                    rel,
                    _line_for(node, ("item",), ""),
                    "item",
                    f"item {finding.item} is already defined in {first_file[finding.item]}",
                )
            )
        else:
            first_file[finding.item] = rel
        if not (root / finding.repro).is_file():
            problems.append(
                Problem(
                    rel, _line_for(node, ("repro",), ""), "repro", f"{finding.repro} does not exist"
                )
            )
        if audit is not None:
            src = audit.source_root.rstrip("/") + "/"
            for i, location in enumerate(finding.locations):
                if not location.path.startswith(src) or ".." in location.path.split("/"):
                    problems.append(
                        Problem(
                            rel,
                            _line_for(node, ("locations", i, "path"), ""),
                            f"locations[{i}].path",
                            f"{location.path} is outside the audited source root {src}",
                        )
                    )
    return problems
