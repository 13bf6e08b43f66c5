"""Tests of repros/: the reproduction scripts, their helpers and their captured outputs."""
