"""The items of the shipped catalog, for tests that go over every item: read from findings/, never
written out as numbers, so an item added with its files is tested like the others."""

from __future__ import annotations

from pathlib import Path

from artbot.records.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
_CATALOG = load_catalog(REPO)

ALL_ITEMS: tuple[int, ...] = tuple(_CATALOG.items)
# The items the tracking issue asks artbot to file: those with no issue of their own yet.
ISSUE_ITEMS: tuple[int, ...] = tuple(f.item for f in _CATALOG.findings if f.issue is None)
# The audit's own items, and artbot's follow-ups (origin: artbot), which carry no recorded
# status: their record states the release they were found in.
AUDIT_ITEMS: tuple[int, ...] = tuple(f.item for f in _CATALOG.findings if not f.is_follow_up)
FOLLOW_UPS: tuple[int, ...] = tuple(f.item for f in _CATALOG.findings if f.is_follow_up)
