"""Checkers: pure functions from a history to a verdict with evidence."""
