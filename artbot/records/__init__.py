"""The records: one finding per YAML file, validated (``models``), loaded with every problem
reported at once (``catalog``), the markers artbot puts in an issue (``marker``)."""
