"""The daemon: scheduling, collections in child processes, the store lock, status and metrics."""
