"""The read-only web dashboard (`gpu-tracker serve`, and the daemon's `[web] listen`): server-
rendered pages (Now, History, Decide, Health), the JSON API of the `latest`, `history` and `tco`
commands, and the page's own assets; nothing is fetched from elsewhere."""
