"""Regenerate tests/golden/ from the shipped catalog: `make golden`, then review the diff."""

from __future__ import annotations

from tests.helpers.golden import GOLDEN_DIR, GOLDEN_ITEMS, golden_checklist, golden_text


def main() -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for item in GOLDEN_ITEMS:
        path = GOLDEN_DIR / f"issue-{item:02d}.md"
        path.write_text(golden_text(item), encoding="utf-8")
        print(f"wrote {path}")
    path = GOLDEN_DIR / "checklist.md"
    path.write_text(golden_checklist(), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
