"""ART's own code, taken from a release's source and run, where its module cannot be imported.

Some of the code a check needs sits inline in a function that cannot be called on CPU (a
generator that needs a tokenizer) or in a file this Python cannot import (3.12 syntax, or GPU
packages). Then the check takes *ART's statements* from the release's text with ``ast``
(``_source``), compiles them under ART's file name and line numbers (a traceback points at the
release's line) and runs them, with the names they use resolved from ART's own imports. Nothing
of ART's code is kept in this project: it is read from the release at each run.

- :func:`advantage_block`: the GRPO advantage statements of ``tokenize_trajectory_groups``
  (preprocessing/tokenize.py), as ``(rewards, scale_rewards) -> [advantage | None]``.
- :func:`function`: one top-level ``def`` of a file, compiled alone.
- :func:`method`: one ``def`` inside a class, compiled alone (called with a stand-in ``self``).
"""

from __future__ import annotations

import ast
import builtins
import importlib
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import _source


def _free_names(nodes: Sequence[ast.AST]) -> set[str]:
    loaded = {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}
    return {n for n in loaded if not hasattr(builtins, n)}


def _imports(art: Any, relpath: str, text: str) -> dict[str, tuple[str, str | None]]:
    """Names a file imports at module level: name -> (module, attribute or None)."""
    package = ".".join([art.name, *relpath.removesuffix(".py").split("/")[:-1]])
    out: dict[str, tuple[str, str | None]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith(("import ", "from ")):
            continue
        node = _source.statement_at(text, n).node
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = (alias.name, None)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                out[alias.asname or alias.name] = (base, alias.name)
    return out


def _namespace(
    art: Any,
    relpath: str,
    text: str,
    names: set[str],
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Globals for extracted code: each free name from the file's own imports (ART modules
    through ``art``'s importer, others as installed), or from ``overrides`` (stand-ins)."""
    imports = _imports(art, relpath, text)
    space: dict[str, Any] = {"__name__": f"{art.name}.extracted"}
    for name in sorted(names):
        if overrides and name in overrides:
            space[name] = overrides[name]
            continue
        if name not in imports:
            continue
        module, attr = imports[name]
        loaded = importlib.import_module(module)
        space[name] = loaded if attr is None else getattr(loaded, attr)
    return space


def _compile(art: Any, relpath: str, module: ast.Module, space: dict[str, Any]) -> None:
    ast.fix_missing_locations(module)
    code = compile(module, f"{art.name}/{relpath}", "exec")
    exec(code, space)  # noqa: S102 - ART's own statements, read from the release


def _shift(nodes: Sequence[ast.stmt], first_line: int) -> list[ast.stmt]:
    for node in nodes:
        ast.increment_lineno(node, first_line - 1)
    return list(nodes)


def function(art: Any, relpath: str, name: str) -> tuple[Callable[..., Any], int]:
    """Top-level ``def name`` of ``art/<relpath>``, compiled alone; and its first line."""
    text = art.source(relpath)
    line = next(
        (n for n in _source.lines_with(text, f"def {name}(") if text.splitlines()[n - 1]
         .startswith(f"def {name}(")),
        None,
    )  # fmt: skip
    if line is None:
        raise LookupError(f"{art.name}/{relpath} defines no top-level {name}()")
    block = _source.block_at(text, line)
    node = _shift([block.node], line)[0]
    space = _namespace(art, relpath, text, _free_names([node]))
    _compile(art, relpath, ast.Module(body=[node], type_ignores=[]), space)
    return space[name], line


def method(
    art: Any, relpath: str, line: int, *, overrides: dict[str, Any] | None = None
) -> tuple[Callable[..., Any], int]:
    """The ``def`` (a method: called with ``self`` first) starting on ``line`` of
    ``art/<relpath>``, compiled alone as a module-level function; and its first line."""
    text = art.source(relpath)
    block = _source.block_at(text, line)
    node = _shift([block.node], line)[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    space = _namespace(art, relpath, text, _free_names([node]), overrides)
    _compile(art, relpath, ast.Module(body=[node], type_ignores=[]), space)
    return space[node.name], line


ADVANTAGE_FUNCTION = "tokenize_trajectory_groups"


def _drops(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Continue) for n in ast.walk(stmt))


def advantage_block(
    art: Any, module_globals: dict[str, Any] | None = None
) -> tuple[Callable[[Sequence[float], bool], list[float | None]], str]:
    """The GRPO advantage of ``tokenize_trajectory_groups``, from the release's source.

    ``module_globals``: the namespace of ``tokenize.py`` imported whole (``art.load``); the
    statements' free names then resolve as in ART (a helper or table defined in the same file
    too), else from the file's imports only.

    Taken from the function's ``for ... in enumerate(trajectory_groups)`` loop: the statements
    before its ``for trajectory in group`` loop that compute the group's statistics, and that
    loop's statements up to and including the ``if advantage == 0 ...: continue`` drop. Run
    on trajectories that carry only a reward; a trajectory that ``continue`` skips is None.
    Returns the callable and where the statements are (``art/...:first-last``).
    """
    relpath = "preprocessing/tokenize.py"
    text = art.source(relpath)
    line = next(iter(_source.lines_with(text, f"def {ADVANTAGE_FUNCTION}(")), None)
    if line is None:
        raise LookupError(f"{art.name}/{relpath} defines no {ADVANTAGE_FUNCTION}()")
    func = _source.block_at(text, line)
    assert isinstance(func.node, ast.FunctionDef)
    _shift([func.node], line)
    outer = next(s for s in func.node.body if isinstance(s, ast.For))
    before: list[ast.stmt] = []
    inner: ast.For | None = None
    for stmt in outer.body:
        if isinstance(stmt, ast.For):
            inner = stmt
            break
        if not _drops(stmt) and not isinstance(stmt, ast.AnnAssign):  # `results: [...] = []`
            before.append(stmt)
    if inner is None:
        raise LookupError(f"{ADVANTAGE_FUNCTION}: no per-trajectory loop")
    body: list[ast.stmt] = []
    for stmt in inner.body:
        body.append(stmt)
        if isinstance(stmt, ast.If) and _drops(stmt):
            break
    else:
        raise LookupError(f"{ADVANTAGE_FUNCTION}: no zero-advantage drop in the loop")
    template = ast.parse(
        "def _artbot_advantages(group, scale_rewards, drop_zero_advantage_trajectories):\n"
        "    _artbot_out = []\n"
        "    for trajectory in group:\n"
        "        _artbot_out.append(None)\n"
        "        _artbot_out[-1] = advantage\n"
        "    return _artbot_out\n"
    )
    fn = template.body[0]
    assert isinstance(fn, ast.FunctionDef)
    loop = fn.body[1]
    assert isinstance(loop, ast.For)
    loop.body[1:1] = body
    fn.body[1:1] = before
    space = _namespace(art, relpath, text, _free_names([*before, *body]), module_globals)
    _compile(art, relpath, ast.Module(body=[fn], type_ignores=[]), space)
    run = space["_artbot_advantages"]

    def advantages(rewards: Sequence[float], scale_rewards: bool = True) -> list[float | None]:
        group = [SimpleNamespace(reward=float(r)) for r in rewards]
        return list(run(group, scale_rewards, True))

    first = min(s.lineno for s in before or body)
    last = max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in body)
    return advantages, f"{art.name}/{relpath}:{first}-{last}"
