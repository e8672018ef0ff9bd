"""`gpu-tracker config`: the configuration file itself, its JSON Schema and its check."""
