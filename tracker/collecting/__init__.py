"""Collecting: the pipeline that runs the collectors into the store, the child process that
isolates each collection, its deadline and failure texts, the demo and its replay server, and
the checks made before a first collection (docs/contributing.md, "The house")."""
