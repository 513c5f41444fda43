"""`lockharness schema`: the scenario file's JSON Schema (draft-07), for editors;
``--model``: the fault model file's (docs/explore.md)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED
from lockharness.harness.explore.generate.model import model_schema
from lockharness.harness.scenario import json_schema


def command(args: argparse.Namespace, console: Console) -> int:
    # As is: rich would wrap and colour it.
    sys.stdout.write(model_schema() if args.model else json_schema())
    return EXIT_AS_EXPECTED
