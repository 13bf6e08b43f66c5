"""The issues artbot writes: what goes into them (``prepare``), the Jinja rendering
(``issue``), and the links to artbot's own scripts (``toolsource``)."""
