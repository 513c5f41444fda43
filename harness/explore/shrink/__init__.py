"""Shrinking a violation: reproducing it, the passes, delta debugging."""
