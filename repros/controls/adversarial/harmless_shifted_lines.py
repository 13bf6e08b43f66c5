"""Every item, a harmless edit: five comment lines at the top of every ART file (each line
number shifts by five) and an unused statement at the end of each. No verdict may change:
every item keeps the verdicts recorded for 0.5.21 and 0.5.23 (a follow-up, which has no
status record: reproduced). artbot's control.
"""

KIND = "harmless"
RELEASES = ("0.5.21", "0.5.23")
ITEMS = "all"
EDITS = [
    ("**/*.py", r"\A", "# artbot control\n# five comment lines\n# shift every line\n#\n#\n"),
    ("**/*.py", r"\Z", "\n_artbot_unused_statement = None\n"),
]
EXPECT = None
