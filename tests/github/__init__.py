"""Tests of artbot/github/: the adapter over PyGithub: its contract, failures, faults and
redirects."""
