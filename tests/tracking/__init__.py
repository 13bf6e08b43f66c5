"""Tests of artbot/tracking/: the tracking issue's block, checklist, requests, sub-issues,
ownership."""
