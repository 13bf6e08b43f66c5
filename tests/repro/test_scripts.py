"""The repro convention in one place: helper imports found with ast, scripts imported by path."""

from __future__ import annotations

import sys
from pathlib import Path

from artbot.repro.scripts import helper_imports, import_script


def test_helper_imports_are_found_in_source_order_once_each() -> None:
    source = (
        '"""import _not_code: a docstring is not an import."""\n'
        "import os, _alpha\n"
        "from _beta import x\n"
        "def f():\n"
        "    import _gamma\n"
        "    from . import _relative\n"
        "    import _alpha\n"
        "from _delta.sub import y\n"
    )
    assert helper_imports(source) == ["_alpha", "_beta", "_gamma"]


def test_a_script_that_does_not_parse_imports_nothing() -> None:
    assert helper_imports("import _x\ndef (:\n") == []


def test_import_script_resolves_sibling_helpers(tmp_path: Path) -> None:
    (tmp_path / "_helper_for_artbot_test.py").write_text("VALUE = 41\n", encoding="utf-8")
    script = tmp_path / "item99_example.py"
    script.write_text(
        "from dataclasses import dataclass\n"
        "from _helper_for_artbot_test import VALUE\n"
        "@dataclass\nclass Point:\n    x: int = VALUE + 1\n",
        encoding="utf-8",
    )
    before = list(sys.path)
    try:
        module = import_script(script, "artbot_test_item99")
        assert module.Point().x == 42
        assert sys.modules["artbot_test_item99"] is module
        assert sys.path == before
    finally:
        sys.modules.pop("artbot_test_item99", None)
        sys.modules.pop("_helper_for_artbot_test", None)
