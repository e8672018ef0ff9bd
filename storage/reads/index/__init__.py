"""The market index (docs/decide.md, "Market index"): its formula, written once in SQL (`sql`),
and the reads that run it (`read`)."""
