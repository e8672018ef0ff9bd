"""The periodic review: the cheapest offers now and then, and the digest it sends."""
