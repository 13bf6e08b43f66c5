"""The reproductions: importing a script (``scripts``), running one in a subprocess (``run``),
exporting the regression tests ART can merge (``export``)."""
