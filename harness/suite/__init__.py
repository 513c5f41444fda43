"""Suites: many runs as a plan, their results, the JUnit file and the HTML index."""
