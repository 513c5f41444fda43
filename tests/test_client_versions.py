"""Any released version of a client's library: ``--client NAME@VERSION`` and ``client:
{name: ..., version: ...}`` (workloads/versions/). Each registry's older release is built
once into the shared cache (``make client-versions`` does it at setup; a test that finds it
missing builds it, as a run would) and reused; a version the registry does not serve is bad
input naming the package, the version and what the registry said."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import tomllib
from pathlib import Path

import msgspec
import pytest
import yaml

from lockharness.core.typed_input import Invalid
from lockharness.harness.explore.campaign.client_identity import client_identity
from lockharness.workloads.client_doc import (
    ClientDoc,
    client_to_plain,
    read_client,
)
from lockharness.workloads.registry import CLIENTS
from lockharness.workloads.versions import VersionError, prepared, version_dir
from lockharness.workloads.versions.go import sorts_before
from tests.conftest import lockharness

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.server

# One older release per registry, each one `make client-versions` builds at setup; and a
# release older than the client's default API (redsync's api_v4_0.go, go-redis v8).
OLDER = {
    "go": ("redsync", "v4.17.0", "redlock-baseline", "go-redsync/redsync v4.17.0"),
    "go, older API": ("redsync", "v4.0.3", "redlock-baseline", "go-redsync/redsync v4.0.3"),
    "npm": ("node-redlock", "5.0.0-beta.1", "redlock-baseline", "redlock 5.0.0-beta.1"),
    "maven": ("redisson-rlock", "3.40.0", "single-baseline", "redisson 3.40.0"),
    "pypi": ("pottery-redlock", "3.0.0", "redlock-baseline", "pottery 3.0.0"),
}


def test_every_library_client_names_its_pinned_build_as_its_default() -> None:
    libraries = {name: info.library for name, info in CLIENTS.items() if info.library}
    pinned = {
        "org.redisson:redisson": re.search(
            r"<redisson.version>(.+?)</redisson.version>",
            (REPO / "clients/redisson/pom.xml").read_text(),
        )[1],  # type: ignore[index]
    }
    for lib in libraries.values():  # each Go or Node client: its own go.mod, package.json
        if lib.registry == "npm":
            meta = json.loads((REPO / lib.source / "package.json").read_text())
            pinned[lib.package] = meta["dependencies"][lib.package]
        elif lib.registry == "go":
            pinned[lib.package] = _go_mod(lib.source, lib.package)
    locked = dict(
        re.findall(r"^([a-z0-9-]+)==(\S+)", (REPO / "requirements.lock").read_text(), re.M)
    )
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(extras["clients"]) <= {f"{p}=={v}" for p, v in locked.items()}
    assert {lib.registry for lib in libraries.values()} == {k.split(",")[0] for k in OLDER}
    for name, lib in libraries.items():
        want = pinned[lib.package] if lib.registry != "pypi" else locked[lib.package]
        assert lib.default == want, name
        # What a listing says it runs is the build it runs.
        assert lib.default.removeprefix("v").split("-")[0] in CLIENTS[name].summary, name


def _go_mod(source: str, module: str) -> str:
    """The version of ``module`` that the client's go.mod (in ``source``) requires."""
    go_mod = (REPO / source / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", go_mod, re.M)
    assert found is not None
    return found[1]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("redsync@4.17.0", "a module version starting with v, as v4.17.0"),
        ("node-redlock@latest", "a release as npm writes it"),
        ("redisson-rlock@three", "a release as Maven Central writes it"),
        ("pottery-redlock@v3.0.0", "a release as PyPI writes it"),
        ("redlock@1.0.0", "redlock runs no library of its own, so it has no versions"),
    ],
)
def test_a_version_not_written_as_its_registry_writes_one_is_refused_before_a_fetch(
    written: str, said: str
) -> None:
    with pytest.raises(Invalid) as refused:
        read_client(written, None)
    assert refused.value.path == "client.version"
    assert said in refused.value.reason and "allowed" in refused.value.reason


def test_the_pinned_version_is_the_default_and_another_is_part_of_the_identity() -> None:
    assert read_client("redsync@v4.18.1", None) == read_client("redsync", None)
    older = read_client(ClientDoc(name="redsync", version="v4.17.0"), None)
    assert older == read_client("redsync@v4.17.0", None)
    assert older.label == client_identity(older) == "redsync@v4.17.0"
    assert client_to_plain(older)["version"] == "v4.17.0"
    assert "version" not in client_to_plain(read_client("redsync", None))
    written = msgspec.convert(client_to_plain(older), ClientDoc)  # as scenario.yaml reads back
    assert read_client(written, None) == older
    with pytest.raises(Invalid, match=r"only with client\.name"):
        read_client(ClientDoc(command=["./prog"], version="1.0.0"), None)


def test_a_bad_version_on_the_command_line_is_bad_input(tmp_path: Path) -> None:
    done = lockharness("run", "single-baseline", "--client", "redsync@4.17.0", cwd=tmp_path)
    assert done.returncode == 254, done.stderr
    assert "client.version" in done.stderr and "v4.17.0" in done.stderr
    assert not (tmp_path / "store").exists()  # nothing started, nothing made


@pytest.mark.parametrize(
    ("written", "answer"),
    [
        ("pottery-redlock@9.9.9", "No matching distribution found for pottery==9.9.9"),
        ("node-redlock@9.9.9", "No matching version found for redlock@9.9.9"),
        ("redsync@v4.99.0", "v4.99.0"),
    ],
)
def test_a_version_the_registry_does_not_serve_is_bad_input_with_its_answer(
    written: str, answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_dir = tmp_path / "versions"
    monkeypatch.setenv("LOCKHARNESS_VERSIONS_DIR", str(env_dir))
    done = lockharness("run", "redlock-baseline", "--client", written, cwd=tmp_path, timeout=300)
    assert done.returncode == 254, done.stderr
    name, _, version = written.partition("@")
    library = CLIENTS[name].library
    assert library is not None
    assert f"{library.package} {version} cannot be fetched" in done.stderr, done.stderr
    assert answer in done.stderr, done.stderr
    assert not (tmp_path / "store").exists()
    # A failed build leaves nothing a later run could take for a build.
    assert not version_dir(library, version).is_dir()
    assert not any(p.name.startswith(".") for p in env_dir.rglob("*") if p.is_dir())


@pytest.mark.parametrize("registry", sorted(OLDER))
def test_an_older_release_is_built_once_and_runs_as_the_client(
    registry: str, tmp_path: Path
) -> None:
    name, version, scenario, announced = OLDER[registry]
    if CLIENTS[name].command and CLIENTS[name].unavailable:
        pytest.skip(f"{name}: {CLIENTS[name].unavailable}")  # its toolchain is not here
    written = f"{name}@{version}"
    ready = lockharness("build-client", written, cwd=tmp_path, timeout=600)
    assert ready.returncode == 0, ready.stderr
    library = CLIENTS[name].library
    assert library is not None
    built = version_dir(library, version)
    assert str(built) in ready.stdout
    stamp = built.stat().st_mtime_ns
    done = lockharness(
        "run",
        scenario,
        "--client",
        written,
        "--duration",
        "2s",
        # One client per worker: a JVM per client on 2 cores beside other tests is late.
        "--threads",
        "1",
        "--store",
        str(tmp_path / "store"),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "building" not in done.stderr  # the cache's build, not a second one
    assert built.stat().st_mtime_ns == stamp
    run_dir = (tmp_path / "store" / "latest").resolve()
    written_back = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    assert written_back["client"]["name"] == name
    assert written_back["client"]["version"] == version
    assert json.loads((run_dir / "results.json").read_text())["client"] == written
    logs = "".join(p.read_text() for p in sorted(run_dir.glob("worker-w*.log")))
    assert announced in logs, logs[-2000:]


def test_a_release_the_clients_imports_would_move_is_refused_not_built_as_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built from the default API's files only (no older API declared), redsync v4.0.3
    lacks the go-redis v9 driver they import: the module graph would build v4.18.1 instead.
    It is refused, naming both; with the older API it builds as itself (above)."""
    monkeypatch.setenv("LOCKHARNESS_VERSIONS_DIR", str(tmp_path / "versions"))
    library = CLIENTS["redsync"].library
    assert library is not None and library.older_api is not None
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        pytest.skip("no Go toolchain here")
    without = dataclasses.replace(library, older_api=None)
    with pytest.raises(VersionError) as refused:
        prepared(without, "v4.0.3", "redsync")
    said = str(refused.value)
    assert "not v4.0.3 (a package the release lacks)" in said, said
    assert not version_dir(without, "v4.0.3").is_dir()


@pytest.mark.parametrize(
    ("version", "than", "older"),
    [
        ("v4.0.3", "v4.12.0", True),
        ("v4.11.9", "v4.12.0", True),
        ("v4.12.0", "v4.12.0", False),
        ("v4.12.0-rc.1", "v4.12.0", True),  # a pre-release comes before its release
        ("v4.18.1", "v4.12.0", False),
        ("v10.0.0", "v9.9.9", False),  # by number, not by text
    ],
)
def test_the_older_api_is_chosen_by_module_version_order(
    version: str, than: str, older: bool
) -> None:
    assert sorts_before(version, than) is older
