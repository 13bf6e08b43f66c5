"""Tests of artbot/patchtest/: `/artbot test`, parsed, tried and answered."""
