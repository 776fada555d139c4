"""Evictors act on confirmed candidates; they are the only code that writes to the cluster."""
