"""Check the findings against real ART code: a git checkout, an unpacked wheel, or a release.

Its modules are listed, one row each, in docs/design.md. Importing this package (as
``artbot --help`` does, to register the commands) loads none of them.
"""
