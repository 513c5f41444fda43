"""`lockharness schema`: the scenario file's JSON Schema (draft-07), for editors."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED
from lockharness.harness.scenario import json_schema


def command(args: argparse.Namespace, console: Console) -> int:
    sys.stdout.write(json_schema())  # as is: rich would wrap and colour it
    return EXIT_AS_EXPECTED
