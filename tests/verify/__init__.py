"""Tests of artbot/verify/: checking findings against a release's code, confined."""
