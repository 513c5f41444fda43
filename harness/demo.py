"""`make demo`: every built-in scenario, briefly, then one table of verdicts.

Exit 0 iff every verdict matched its scenario's expectation.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary
from harness.console import print_summary
from harness.errors import EXIT_AS_EXPECTED, EXIT_NOT_AS_EXPECTED, LockharnessError
from harness.runner import Binaries, RunOutcome, run_scenario
from harness.scenario import builtin_scenarios, with_overrides

DEMO_DURATION_NS = 5_000_000_000


def main() -> int:
    console = Console()
    try:
        binaries = Binaries(find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER))
    except LockharnessError as e:
        console.print(f"[red]lockharness demo:[/] {e}")
        return e.exit_code
    outcomes: list[RunOutcome] = []
    for scenario in builtin_scenarios():
        scenario = with_overrides(scenario, duration_ns=DEMO_DURATION_NS)
        outcome = run_scenario(scenario, store=Path("store"), binaries=binaries, console=console)
        print_summary(console, scenario.name, outcome.result, scenario.expect, outcome.run_dir)
        outcomes.append(outcome)
        if outcome.interrupted:
            break
    table = Table("scenario", "client", "verdict", "expected", "match", "cycles/s")
    for o in outcomes:
        rate = o.result.stats.get("cycles_per_s") or 0.0
        table.add_row(
            o.scenario.name, o.scenario.client.name, o.result.verdict.value, o.scenario.expect,
            "yes" if o.as_expected else "[red]NO[/]", f"{rate:.1f}",
        )  # fmt: skip
    console.print(table)
    ok = all(o.as_expected for o in outcomes)
    return EXIT_AS_EXPECTED if ok else EXIT_NOT_AS_EXPECTED


if __name__ == "__main__":
    sys.exit(main())
