"""The suite as JUnit XML, for CI dashboards: one testcase per (scenario, client, seed).

A verdict that is not the expected one is a <failure> whose message carries the evidence
(the first witness, or why no violation was found); unknown and interrupted runs are
<error>s (there is no verdict to compare); runs the suite never reached are <skipped>.
One <testsuite> per scenario, so dashboards group the clients and seeds under it.
"""

from __future__ import annotations

import os
import re
import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from lockharness.checker import CheckResult
from lockharness.core.run_dir import RunDir
from lockharness.harness.suite.results import CaseResult, Status

_MAX_WITNESSES = 10  # in a failure's body; results.json has them all

# Characters XML 1.0 cannot carry at all (an error message may hold one).
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: object) -> str:
    return _NOT_XML.sub("?", str(value))


def testcase_name(result: CaseResult) -> str:
    case = result.case
    return f"{case.name}[client={case.client},seed={case.seed}]"


def _details(result: CaseResult, witnesses: int = _MAX_WITNESSES) -> str:
    """Reasons, up to ``witnesses`` witnesses, stats and where the run lives."""
    o = result.outcome
    if o is None:
        return ""
    lines = [*o.result.reasons]
    if o.result.exposure.had_faults:
        lines.append(o.result.exposure.describe())
    found = o.result.witnesses
    lines += [f"witness: {w.describe()}" for w in found[:witnesses]]
    if len(found) > witnesses:
        lines.append(f"… {len(found) - witnesses} more witnesses in {RunDir.RESULTS}")
    lines += [o.result.stats.describe(), f"run directory: {o.run_dir}"]
    return "\n".join(lines)


def _outcome_element(result: CaseResult) -> ET.Element | None:
    status = result.status
    if status is Status.AS_EXPECTED:
        return None
    if status is Status.NOT_RUN:
        return ET.Element("skipped", message=_text(result.explain()))
    tag = "failure" if status is Status.NOT_AS_EXPECTED else "error"
    verdict = result.outcome.result.verdict.value if result.outcome else "none"
    element = ET.Element(tag, message=_text(result.explain()), type=verdict)
    element.text = _text(_details(result))
    return element


def _properties(result: CaseResult) -> ET.Element:
    case, o = result.case, result.outcome
    values: dict[str, object] = {
        "number": case.number,  # in the whole suite: a shard's cases keep theirs
        "scenario": case.name,
        "client": case.client,
        "seed": case.seed,
        "expect": case.scenario.expect,
        "status": result.status.value,
    }
    if o is not None:
        values |= {
            "verdict": o.result.verdict.value,
            "run_dir": o.run_dir,
            "first_violation_s": result.first_violation_s,
            "cycles_per_s": result.cycles_per_s,
        } | _exposure(o.result)
    properties = ET.Element("properties")
    for name, value in values.items():
        if value is not None:
            ET.SubElement(properties, "property", name=name, value=_text(value))
    return properties


def _exposure(result: CheckResult) -> dict[str, object]:
    """exposure.faults, .touched, .vacuous (a valid run whose faults touched no live
    lease) and exposure.<kind> per way of touching (checker.EXPOSURE_KINDS)."""
    exposure = result.exposure
    values: dict[str, object] = {
        "exposure.faults": exposure.faults,
        "exposure.touched": exposure.touched,
        "exposure.vacuous": "true" if result.vacuous else "false",
    }
    return values | {
        f"exposure.{kind}": n for kind, n in {**exposure.counts, **exposure.moments}.items()
    }


def _testcase(result: CaseResult) -> ET.Element:
    case = ET.Element(
        "testcase",
        classname=_text(result.case.name),
        name=_text(testcase_name(result)),
        time=f"{result.elapsed_s:.3f}",
    )
    case.append(_properties(result))
    if (outcome := _outcome_element(result)) is not None:
        case.append(outcome)
    if result.outcome is not None:
        # Short: the evidence of a mismatch is in its failure, all of it in results.json.
        ET.SubElement(case, "system-out").text = _text(_details(result, witnesses=1))
    return case


def _counts(results: Sequence[CaseResult]) -> dict[str, str]:
    statuses = [r.status for r in results]
    return {
        "tests": str(len(results)),
        "failures": str(statuses.count(Status.NOT_AS_EXPECTED)),
        "errors": str(statuses.count(Status.UNKNOWN) + statuses.count(Status.INTERRUPTED)),
        "skipped": str(statuses.count(Status.NOT_RUN)),
        "time": f"{sum(r.elapsed_s for r in results):.3f}",
    }


def _testsuite(name: str, results: Sequence[CaseResult]) -> ET.Element:
    started = [r.started_at for r in results if r.started_at]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(min(started or [time.time()])))
    suite = ET.Element(
        "testsuite",
        {"name": _text(name), "timestamp": stamp, "hostname": socket.gethostname()}
        | _counts(results),
    )
    for result in results:
        suite.append(_testcase(result))
    return suite


def junit_tree(results: Sequence[CaseResult]) -> ET.ElementTree:
    by_scenario: dict[str, list[CaseResult]] = {}
    for result in results:
        by_scenario.setdefault(result.case.name, []).append(result)
    root = ET.Element("testsuites", {"name": "lockharness suite"} | _counts(results))
    for name, group in by_scenario.items():
        root.append(_testsuite(name, group))
    tree = ET.ElementTree(root)
    ET.indent(tree)
    return tree


def write_junit(results: Sequence[CaseResult], path: Path) -> None:
    """Written whole, then renamed into place: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    junit_tree(results).write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)
