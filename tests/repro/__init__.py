"""Tests of artbot/repro/: running the repro scripts, and the regression tests artbot exports."""
