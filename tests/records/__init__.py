"""Tests of artbot/records/: the catalog, its markers and its input checks."""
