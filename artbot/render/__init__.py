"""The issues artbot writes: what goes into them (prepare), the Jinja rendering (issue), links to artbot's own scripts (toolsource)."""
