"""One parallel job: an ordinary run of a resolved scenario file, in a process of its own.

`suite --jobs J` and `explore --jobs J` start one of these per run (harness/parallel/jobs.py):
``python -m lockharness.harness.parallel.job RUN_DIR --store STORE --redis-server PATH
--toxiproxy-server PATH``, where the controller has made RUN_DIR and written the resolved
scenario into it. It is `lockharness run` without the summary: the same stop handlers (a
stop signal tears the run down, checks what it recorded, exit 130), the same
results.json and exit codes; the controller reads the outcome back from RUN_DIR.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from rich.console import Console

from lockharness.core.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, LockharnessError
from lockharness.core.interrupts import install_stop_handlers

SOURCE_HEADER = "# resolved from "  # harness/scenario/write.py's to_yaml


def main(argv: list[str] | None = None) -> int:
    install_stop_handlers()  # first: a stop signal from here on is a clean teardown
    try:
        parser = argparse.ArgumentParser(prog="python -m lockharness.harness.parallel.job")
        parser.add_argument("run_dir", type=Path)
        parser.add_argument("--store", type=Path, required=True)
        parser.add_argument("--redis-server", type=Path, required=True)
        parser.add_argument("--toxiproxy-server", type=Path, required=True)
        args = parser.parse_args(argv)
        # Imported here: a stop signal during these imports is already a clean exit 130.
        from lockharness.core.run_dir import RunDir
        from lockharness.harness.run.binaries import Binaries
        from lockharness.harness.run.runner import run_scenario
        from lockharness.harness.scenario import load_scenario

        run_dir = RunDir(args.run_dir)
        scenario = load_scenario(str(run_dir.scenario))
        # Where it came from, as the controller's copy says: kept in the rewritten header.
        first = run_dir.scenario.read_text(encoding="utf-8").partition("\n")[0]
        if first.startswith(SOURCE_HEADER):
            scenario = dataclasses.replace(scenario, source=first.removeprefix(SOURCE_HEADER))
        binaries = Binaries(args.redis_server, args.toxiproxy_server)
        # The controller draws the progress; this output goes to the job's log file.
        console = Console(file=sys.stdout, width=10_000, no_color=True, soft_wrap=True)
        outcome = run_scenario(
            scenario, store=args.store, binaries=binaries, console=console, run_dir=run_dir
        )
        return outcome.exit_code
    except LockharnessError as e:
        print(f"lockharness-job: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("lockharness-job: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:
        import traceback

        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
