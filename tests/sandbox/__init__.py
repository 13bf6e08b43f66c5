"""Tests of artbot/sandbox/: the loopback GitHub the suite runs against."""
