"""Tests of artbot/status/: the status records and their verdicts."""
