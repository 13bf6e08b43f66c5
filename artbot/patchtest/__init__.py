"""Patch testing on request: ``/artbot test`` on an issue artbot filed, with a diff or a pull
request of ART's, answered with the item's verdict before and after the patch.

- :mod:`.command` parses the comment (pure; a cap hit is the answer);
- :mod:`.diff` parses and applies a unified diff in pure Python (no ``patch``/``git apply`` on
  untrusted input), only under ``src/art/``;
- :mod:`.trial` applies it to a fresh copy of a release and runs the item's check and its
  regression test, confined and without a token, before and after;
- :mod:`.answer` renders the one answer (pure);
- :mod:`.plan` decides, from the comments seen, which answers to post (pure);
- :mod:`.respond` reads the comments and posts through the adapter.
"""
