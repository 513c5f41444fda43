"""`lockharness explore`: random fault mixes inside a fault model (docs/explore.md)."""

from __future__ import annotations

import argparse
import contextlib
import random
from pathlib import Path

import yaml
from rich.console import Console

from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, convert
from lockharness.harness.cli.common import find_binaries, warn_leftovers
from lockharness.harness.explore.campaign.campaign import Explorer, explore_directory
from lockharness.harness.explore.campaign.carried import carried_corpus
from lockharness.harness.explore.campaign.known_replay import known_failures
from lockharness.harness.explore.campaign.report import INDEX_HTML
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.generate.defaults import DEFAULT_BUDGET_NS
from lockharness.harness.explore.generate.draw import bare_trial
from lockharness.harness.explore.generate.model import (
    FaultModel,
    load_model,
    model_lines,
    model_names,
)
from lockharness.harness.merge.nights import write_nights
from lockharness.harness.parallel.job_slots import default_jobs
from lockharness.harness.parallel.sharding import UNSHARDED
from lockharness.harness.run.backends import check_backend
from lockharness.harness.scenario import ClientDoc, ClientSpec, resolve_scenario
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.harness.scenario.model import ClusterSpec
from lockharness.harness.store.layout import check_store
from lockharness.workloads.client_doc import read_client, resolve_client, switch_client

_YAML = (".yaml", ".yml")


def explore_client(ref: str) -> ClientSpec:
    """A client as `--client` names it: a built-in, module:Class, or a YAML file whose
    ``client:`` says it as a scenario would (a program in any language, with options)."""
    try:
        if ref.endswith(_YAML) and Path(ref).is_file():
            data = yaml.safe_load(Path(ref).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or "client" not in data:
                raise BadInput(
                    f"{ref}: no client: key; allowed: a YAML file with client: "
                    "as a scenario writes it"
                )
            written = data["client"]
            doc = (
                ClientDoc(name=written)
                if isinstance(written, str)
                else convert(written, ClientDoc, "client")
            )
            return resolve_client(read_client(doc, Path(ref).parent.resolve()))
        placeholder = read_client(ClientDoc(name="single"), None)
        return switch_client(placeholder, ref, None, "--client")
    except Invalid as e:
        raise BadInput(f"{ref}: {e}" if ref.endswith(_YAML) else str(e)) from None
    except (OSError, yaml.YAMLError) as e:
        raise BadInput(f"{ref}: cannot read: {e}") from None


def command(args: argparse.Namespace, console: Console) -> int:
    if args.list_models:
        for name in model_names():
            # Not markup: a list of choices ("[isolate, ring]") is no rich tag.
            lines = "\n".join(model_lines(load_model(name)))
            console.print(lines, markup=False, highlight=False, soft_wrap=True)
        return 0
    if not args.client:
        raise BadInput(
            "--client is required; allowed: a client name (`lockharness list --clients`), "
            "module:Class, or a YAML file with client:"
        )
    if args.reproduce > args.replays:
        raise BadInput(
            f"--reproduce {args.reproduce} is more than --replays {args.replays}; "
            f"allowed: 1 to {args.replays}"
        )
    client = explore_client(args.client)
    if (why := client.info().unavailable) is not None:
        raise BadInput(f"--client {args.client} cannot run here: {why}")
    model = load_model(args.model)
    check_fits(model, client, args.model, args.client)
    backend = args.backend
    if backend is not None:
        check_backend(backend, ClusterSpec())
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    budget = (
        args.budget if args.budget is not None or args.trials is not None else DEFAULT_BUDGET_NS
    )
    request = ExploreRequest(
        client=client,
        model=model,
        seed=seed,
        budget_ns=budget,
        trials=args.trials,
        shrink=not args.no_shrink,
        k=args.replays,
        m=args.reproduce,
        shrink_budget_ns=args.shrink_budget,
        max_violations=args.violations,
        backend=backend,
        redis_image=args.redis_image,
        toxiproxy_image=args.toxiproxy_image,
        jobs=args.jobs if args.jobs is not None else default_jobs(),
        shard=args.shard or UNSHARDED,
        replay_known=not args.no_replay_known,
        fixed_after=args.fixed_after,
        fresh=args.fresh,
        keep_all=args.keep == "all",
    )
    binaries = find_binaries(args)
    check_store(args.store)
    # What earlier nights left, read first: a corrupt file is 254 before anything starts.
    known = known_failures(args.store, request)
    carried = carried_corpus(args.store, request)
    warn_leftovers(args.store)
    directory = explore_directory(args.store)
    spend = f"{budget / 6e10:g} min" if budget is not None else f"{args.trials} trial(s)"
    at_once = f", {request.jobs} trials at a time" if request.jobs > 1 else ""
    console.print(
        f"[bold]explore[/] client {client.label} under model {model.name}, seed {seed}"
        f"{f', shard {args.shard}' if args.shard else ''}, "
        f"{spend}{at_once} → {directory}",
        highlight=False,
        soft_wrap=True,  # one line in a log too: grep finds the path beside the arrow
    )
    if known:
        console.print(
            f"replaying {len(known)} known failure(s) of {client.label} under {model.name} first",
            highlight=False,
            soft_wrap=True,
        )
    if carried is not None:
        console.print(
            f"starting from the corpus earlier nights left: {len(carried.entries)} trial(s), "
            f"{len(carried.cells)} exposure cells (--fresh to start empty)",
            highlight=False,
            soft_wrap=True,
        )
    record = Explorer(request, directory, binaries, console, known, carried).run()
    console.print(record.verdict_line(), highlight=False, soft_wrap=True)
    known_lines = [k.line() for k in record.known]
    for line in [*known_lines, *(v.line() for v in record.violations), *record.unknown_lines()]:
        console.print(f"  {line}", highlight=False, soft_wrap=True)
    console.print(f"  report: {directory / INDEX_HTML}", highlight=False)
    with contextlib.suppress(OSError):  # a full store keeps its last page
        console.print(f"  the nights: {write_nights(args.store)}", highlight=False)
    return record.exit_code


def check_fits(model: FaultModel, client: ClientSpec, model_ref: str, client_ref: str) -> None:
    """BadInput before anything starts when the model's trials cannot run this client (a
    replicated model and a client that needs independent masters, one that finds the
    master through Sentinel in a model without Sentinels): its first trial, checked as a
    run checks a scenario, says why."""
    for path, reason in scenario_problems(resolve_scenario(bare_trial(model, client, 0))):
        raise BadInput(f"--model {model_ref} does not fit --client {client_ref}: {path}: {reason}")
