"""artbot: files the findings of ART's numerics audit as GitHub issues and keeps them in step."""

__version__ = "0.1.0"
