"""Tests of artbot/settings.py: the one reader of the environment."""
