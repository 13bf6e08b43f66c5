"""The commands defined in their own modules, loaded only when one runs (or shows its own help).

``artbot --help`` lists them from this table without importing their modules, and a command's
one-line help is this table's (set on it when it is loaded), so the two cannot differ. Shell
completion and ``artbot COMMAND --help`` load the one module named.
"""

from __future__ import annotations

from typing import NamedTuple


class Lazy(NamedTuple):
    module: str
    attribute: str
    short_help: str


LAZY: dict[str, Lazy] = {
    "action": Lazy(
        "artbot.action", "action", "Run as the composite action (action.yml), inputs from INPUT_*."
    ),
    "verify": Lazy(
        "artbot.verify.cli", "verify", "Check the findings against ART's code, claim by claim."
    ),
    "open": Lazy(
        "artbot.cli.github", "open_", "File items' issues, linked from the tracking issue."
    ),
    "sync": Lazy(
        "artbot.cli.github", "sync", "Keep the issues and the tracking checklist in step."
    ),
    "demo": Lazy(
        "artbot.cli.sandbox", "demo", "The main job on a built-in GitHub sandbox (no token)."
    ),
    "sandbox": Lazy("artbot.cli.sandbox", "sandbox", "Run the GitHub sandbox in the foreground."),
    "test": Lazy(
        "artbot.cli.patchtest", "test", "Try a patch on one item: the verdicts before and after."
    ),
    "answer-tests": Lazy(
        "artbot.cli.patchtest",
        "answer_tests",
        "Answer the `/artbot test` comments on artbot's issues.",
    ),
}
