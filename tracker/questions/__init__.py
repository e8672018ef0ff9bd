"""The questions to the store that the command line and the web dashboard both ask: `latest`,
`history` and `tco`, as plain functions over parsed arguments that build the answers'
documents, and the parameter definitions both check what a person asks with
(docs/contributing.md, "The house")."""
