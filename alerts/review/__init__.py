"""The periodic review's wording beyond its price tables (`alerts.digest` and
`alerts.digest_render` render the digest): `compute`, what compute costs then and now."""
