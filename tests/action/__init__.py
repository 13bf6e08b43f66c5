"""Tests of the composite action (action.yml) and artbot/action.py, its account of a run."""
