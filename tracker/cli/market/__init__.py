"""The commands about the market as a whole: `index` (docs/decide.md, "Market index")."""
