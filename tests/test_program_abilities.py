"""A program given by ``command`` declares in its client file what it can do beyond the
basics (``abilities: [extend]``): known before it runs, so a scenario may have its sections
extend and explore draws extends for it, as for any client that extends. A program whose
init does not say what its file declared ends the run unknown in those words; the
declaration is refused anywhere but beside ``command``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from lockharness.core.typed_input import Invalid
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.scenario import load_scenario, to_yaml
from lockharness.workloads.client_doc import ClientDoc, read_client
from tests.conftest import lockharness

TINY_LOCK = Path(__file__).parent / "programs" / "tiny_lock.py"
EXTENDING = ClientDoc(command=[sys.executable, str(TINY_LOCK)], abilities=["extend"])


@pytest.mark.unit
def test_a_declared_extend_makes_the_program_a_client_that_extends() -> None:
    plain = read_client(ClientDoc(command=[sys.executable, str(TINY_LOCK)]), None)
    declared = read_client(EXTENDING, None)
    assert not plain.info().extends and declared.info().extends
    assert declared.task().abilities == ("extend",)
    model = load_model("single-instance")  # extend: true
    drawn = {draw(model, declared, seed, 1).scenario.workload.extend for seed in range(40)}
    assert drawn == {True, False}
    never = {draw(model, plain, seed, 1).scenario.workload.extend for seed in range(40)}
    assert never == {False}


@pytest.mark.unit
def test_the_declaration_is_written_back_with_the_scenario(tmp_path: Path) -> None:
    trial = draw(load_model("single-instance"), read_client(EXTENDING, None), 7, 1).scenario
    path = tmp_path / "trial.yaml"
    path.write_text(to_yaml(trial))
    assert "abilities:" in path.read_text()
    assert load_scenario(path).client == trial.client


@pytest.mark.unit
@pytest.mark.parametrize(
    "doc",
    [ClientDoc(name="single", abilities=["extend"]), ClientDoc(class_="m:C", abilities=[])],
)
def test_abilities_are_refused_beside_anything_but_a_command(doc: ClientDoc) -> None:
    with pytest.raises(Invalid, match=r"client\.abilities: only with client\.command"):
        read_client(doc, None)


@pytest.mark.unit
def test_an_ability_programs_do_not_have_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"description: x\nclient: {{command: [{sys.executable}, {TINY_LOCK}], "
        "abilities: [reentrant]}\n"
    )
    done = lockharness("run", str(path), "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    assert str(path) in done.stderr and "abilities" in done.stderr and "extend" in done.stderr


def _scenario(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"{mode}.yaml"
    path.write_text(
        f"""\
description: a program that declares extend, its sections extending past one TTL
min_cycles: 1
expect: valid
duration: 2s
cluster: {{nodes: 1}}
client:
  command: [{sys.executable}, {TINY_LOCK}, {mode}]
  abilities: [extend]
workload: {{workers: 2, threads: 1, keys: 1, ttl: 300ms, hold_min: 500ms, hold_max: 600ms,
  extend: true}}
"""
    )
    return path


def test_a_program_that_declares_extend_extends_in_a_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = lockharness("run", str(_scenario(tmp_path, "v2")), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = store.glob("v2/*/")
    events = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    assert [e for e in events if e["f"] == "extend" and e["type"] == "ok"]


def test_a_program_whose_init_does_not_say_what_its_file_declares_is_unknown(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    path = _scenario(tmp_path, "no-abilities")
    done = lockharness("run", str(path), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = re.sub(r"\s+", " ", done.stdout)
    assert "exited with code 78 before its clients were ready" in said
    assert "its client file declares abilities ['extend'], but its init said []" in said
