"""Tests of artbot/render/: issue bodies, the checklist and the status as an issue shows it."""
