"""Patch testing on request: ``/artbot test`` on an issue artbot filed, with a diff or a pull
request of ART's, answered with the item's verdict before and after the patch (its modules:
docs/design.md).
"""
