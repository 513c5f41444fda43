"""What an exploration does unless told otherwise, defined here once: the command line
(harness/cli/main.py, harness/cli/explore.py), the pytest fixture
(harness/pytest_plugin/explores.py), the request, the shrinker and the docs' figures
(tests/test_explore_report.py checks docs/explore.md says these) all take them from here."""

from __future__ import annotations

_MINUTE_NS = 60 * 1_000_000_000

DEFAULT_K = 5  # runs of a violation's replay, and of a shrinking candidate at most
DEFAULT_M = 3  # invalid runs among k that make a candidate a reproducer
DEFAULT_BUDGET_NS = 30 * _MINUTE_NS  # `lockharness explore` without --budget or --trials
DEFAULT_SHRINK_BUDGET_NS = 10 * _MINUTE_NS  # per violation
DEFAULT_MAX_CANDIDATES = 60  # shrinking candidates run per violation
DEFAULT_VIOLATIONS = 1  # exploring stops once this many are found (and settled)
DEFAULT_MODEL = "redlock"
