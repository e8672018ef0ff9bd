"""What a running daemon leaves for others to read: its state file and store lock (state), and
the per-provider status that `gpu-tracker status` and the web dashboard show (status)
(docs/daemon.md)."""
