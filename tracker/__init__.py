"""The tracker: config.toml, the `gpu-tracker` command, the collection pipeline and the demo.

The only package that reads config.toml and the environment; nothing imports it.
"""
