"""Reads that answer a user's question over the whole history (statistics of price series, the
total cost of a GPU need, exports): each module owns its SQL and returns plain rows."""
