"""The terminal, apart from what is said on it: plain text tables, the pager, colour. Knows nothing of plans."""
