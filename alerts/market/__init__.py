"""Alert rules about the market as a whole: the `index` rule kind (docs/alerts.md)."""
