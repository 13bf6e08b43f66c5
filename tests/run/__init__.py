"""Tests of artbot/run/: one run observed, planned and carried out (open, sync), against the
sandbox."""
