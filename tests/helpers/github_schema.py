"""GitHub's published REST schema (API version 2022-11-28), and the check of what the sandbox
sent against it.

The schema is githubkit's, generated from GitHub's OpenAPI description: pydantic models, and
for each endpoint a method whose docstring names it (``GET /repos/{owner}/{repo}/issues``) and
whose ``request(...)`` call names the model of its answer (``response_model=list[Issue]``) and
of its errors (``error_models={"404": BasicError, ...}``). :func:`endpoint` reads them from
githubkit's code, so no model is chosen by hand. :func:`problems` checks one response:

- a 2xx body against the endpoint's response model, an error body against the endpoint's model
  for that status, else ``BasicError`` (GitHub's body for any error a schema does not list: a
  401, a rate limit, an injected 5xx), a redirect's body too;
- a required field missing, or of the wrong type, is a problem, and so is a key the published
  schema does not have (githubkit's models drop unknown keys, so the validated model is dumped
  again and compared), except ``status`` in an error body, which GitHub sends in every one;
- a 204 or 304 carries no body; an endpoint GitHub does not publish is a problem.

tests/conftest.py runs this on every response every sandbox sends during the suite.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import TypeAdapter, ValidationError

from artbot.sandbox import API_VERSION, SentResponse

PACKAGE = "githubkit_schemas.v" + API_VERSION.replace("-", "_")
# The githubkit modules holding the endpoints the sandbox serves.
REST_MODULES = ("issues", "repos", "users", "rate_limit", "pulls")
# A pull request asked for as its diff is text (``git diff``'s), not the JSON model.
DIFF_MEDIA_TYPE = "application/vnd.github.diff"
_DOCSTRING_ENDPOINT = re.compile(r"^\s*(GET|POST|PATCH|PUT|DELETE) (/\S*)\s*$", re.M)


@dataclass(frozen=True)
class Endpoint:
    """One published endpoint: the source of its models' type expressions."""

    method: str
    path: str
    response: str | None  # e.g. "list[Issue]"; None: no body (204)
    errors: Mapping[str, str]  # status -> e.g. "BasicError"


def shape(path: str) -> str:
    """A path template with its parameters unnamed: ``/repos/{}/{}/issues/{}``."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def models() -> Any:
    return import_module(f"{PACKAGE}.models")


@functools.cache
def _methods() -> dict[tuple[str, str], str]:
    """The source of each endpoint's method in :data:`REST_MODULES`, keyed by (method,
    :func:`shape` of its path). Cut from the text, each method is parsed only when asked for
    (parsing the modules whole takes half a second; most of their endpoints are not served)."""
    package = Path(import_module(f"{PACKAGE}.rest").__file__ or "").parent
    found: dict[tuple[str, str], str] = {}
    for module in REST_MODULES:
        text = (package / f"{module}.py").read_text(encoding="utf-8")
        for chunk in text.split("\n    def ")[1:]:
            # Up to the next method, decorator or class.
            source = re.split(r"\n {0,4}(?:@|def |async def |class )", chunk, maxsplit=1)[0]
            match = _DOCSTRING_ENDPOINT.search(source)
            if match is not None:
                found[(match[1], shape(match[2]))] = "def " + source
    return found


@functools.cache
def endpoint(method: str, path: str) -> Endpoint | None:
    """The published endpoint ``method path`` (``path`` with parameters of any name)."""
    source = _methods().get((method, shape(path)))
    if source is None:
        return None
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return _endpoint(node)


def _endpoint(node: ast.FunctionDef) -> Endpoint | None:
    match = _DOCSTRING_ENDPOINT.search(ast.get_docstring(node) or "")
    if match is None:
        return None
    keywords = {
        kw.arg: kw.value
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "request"
        for kw in call.keywords
    }
    response = keywords.get("response_model")
    errors: dict[str, str] = {}
    table = keywords.get("error_models")
    if isinstance(table, ast.Dict):
        for key, value in zip(table.keys, table.values, strict=True):
            if isinstance(key, ast.Constant) and value is not None:
                errors[str(key.value)] = ast.unparse(value)
    shown = ast.unparse(response) if response is not None else None
    return Endpoint(match[1], match[2], shown, errors)


class _Models(dict[str, Any]):
    """Names in a type expression, looked up in githubkit's models as they are used."""

    def __missing__(self, name: str) -> Any:
        return getattr(models(), name)


@functools.cache
def adapter(expression: str) -> TypeAdapter[Any]:
    """A validator for a type expression of githubkit's (``list[Issue]``)."""
    names = _Models(list=list, Union=Union, Literal=Literal)
    return TypeAdapter(eval(expression, {}, names))  # noqa: S307 - githubkit's own code


def model_for(sent: SentResponse) -> tuple[str | None, str | None]:
    """(the type expression the body must match, or None for no body; a problem, or None)."""
    if sent.status in (204, 304):
        return None, None
    error = sent.status >= 300 or sent.fault
    if sent.route is None:
        if error:
            return "BasicError", None
        return None, f"no endpoint served {sent.method} {sent.path}"
    published = endpoint(sent.method, sent.route)
    if published is None:
        return None, f"{sent.method} {sent.route} is not in GitHub's published API"
    if error:
        return published.errors.get(str(sent.status), "BasicError"), None
    return published.response, None


def problems(sent: SentResponse, seen: set[int] | None = None) -> list[str]:
    """What in ``sent`` GitHub's published schema does not allow (empty: nothing). A list is
    checked item by item; with ``seen``, an item checked before (its hash in ``seen``) is not
    checked again."""
    where = f"{sent.method} {sent.route or sent.path} -> {sent.status}"
    if sent.status == 0:
        return []  # a dropped connection: nothing was sent
    expression, problem = model_for(sent)
    if problem is not None:
        return [problem]
    asked = sent.request_headers.get("Accept", "")
    if DIFF_MEDIA_TYPE in asked and sent.status == 200:
        diff = sent.body.startswith("diff --git ") or not sent.body
        return [] if diff else [f"{where}: not a diff: {sent.body[:80]!r}"]
    if expression is None:
        return [f"{where}: a body, where GitHub sends none"] if sent.body else []
    try:
        data = json.loads(sent.body)
    except ValueError:
        return [f"{where}: not JSON: {sent.body[:80]!r}"]
    item = re.fullmatch(r"list\[(.+)\]", expression)
    if item is None or not isinstance(data, list):
        pairs = [(expression, data, "$")]
    else:
        pairs = [(item[1], element, f"$[{i}]") for i, element in enumerate(data)]
    found: list[str] = []
    for model, value, path in pairs:
        if seen is not None:
            key = hash((model, json.dumps(value, sort_keys=True)))
            if key in seen:
                continue
            seen.add(key)
        found += [f"{where}: {message}" for message in check(model, value, path, sent)]
    return found


def check(expression: str, data: Any, path: str, sent: SentResponse) -> Iterator[str]:
    """``data`` against the type ``expression``: missing or mistyped fields, unknown keys."""
    validator = adapter(expression)
    try:
        value = validator.validate_python(data)
    except ValidationError as exc:
        for e in exc.errors():
            yield f"{expression} at {path}{_location(e['loc'])}: {e['msg']}"
        return
    kept = validator.dump_python(value, mode="json", by_alias=True, exclude_unset=True)
    # GitHub sends "status" in every error body; the schema lists it for BasicError only.
    allowed = {f"{path}.status"} if sent.status >= 300 or sent.fault else set()
    for key in unknown_keys(data, kept, path):
        if key not in allowed:
            yield f"{expression} has no key {key}"


def _location(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def unknown_keys(sent: Any, kept: Any, path: str = "$") -> Iterator[str]:
    """Keys of ``sent`` that the validated and dumped ``kept`` lost: ones the schema lacks."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, value in sent.items():
            if key not in kept:
                yield f"{path}.{key}"
            else:
                yield from unknown_keys(value, kept[key], f"{path}.{key}")
    elif isinstance(sent, list) and isinstance(kept, list):
        for i, (a, b) in enumerate(zip(sent, kept, strict=True)):
            yield from unknown_keys(a, b, f"{path}[{i}]")


class SchemaCheck:
    """Checks responses, each body (and each item of a list) once per process."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def __call__(self, responses: list[SentResponse]) -> list[str]:
        found: list[str] = []
        for sent in responses:
            key = hash((sent.method, sent.route, sent.status, sent.fault, sent.body))
            if key not in self._seen:
                self._seen.add(key)
                found += problems(sent, self._seen)
        return found
