"""The records: one finding per YAML file, validated (models), loaded with every problem at once (catalog)."""
