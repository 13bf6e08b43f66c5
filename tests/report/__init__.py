"""Tests of artbot/report/: what a run reports (results, output, redaction)."""
