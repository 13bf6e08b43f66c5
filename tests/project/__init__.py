"""Tests of the project as a whole: docs, README, workflows, layering, the suite's own rules
and helpers."""
