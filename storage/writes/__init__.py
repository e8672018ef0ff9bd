"""What the store checks before it writes: every price of every collector passes here once."""
