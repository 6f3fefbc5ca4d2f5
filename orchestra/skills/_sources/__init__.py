"""Hook sources: each file format turned into the same hook specs, and trusting them."""
