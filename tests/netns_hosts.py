"""Other hosts on this machine, for the tests of pytest-xdist's ssh gateways: each a
network namespace with a veth pair to the root namespace and Debian's sshd inside.

A namespace host shares this machine's filesystem and processes' view of files (the same
venv, the same test files) but has its own network: its own loopback, where the
plug-in's redis-servers and Toxiproxy listen, and one address, 10.231.K.2/30, where its
sshd does (the root namespace's side of the pair is 10.231.K.1/30). Its sshd takes root
by a key made for the test only; the client's ssh_config (the test's too) names that key
and trusts whatever host key it is shown: these hosts live for one test.

Making them needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2's ``ip``, ssh,
ssh-keygen and /usr/sbin/sshd (`make setup` installs Debian's). ``unavailable()`` says
why they cannot be made here. Whatever happens, ``namespace_hosts`` ends by killing
every process in each namespace (the sshd, its sessions and whatever they started),
deleting the namespaces and their veths, and checking that none is left.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

SUBNET = "10.231"  # 10.231.K.0/30 per host: .1 the root namespace's side, .2 the host's
SSHD = Path("/usr/sbin/sshd")
SSHD_PRIVSEP = Path("/run/sshd")  # sshd's privilege separation directory (compiled in)
NAMESPACE_PREFIX = "lockharness-"
VETH_PREFIX = "lhns"  # lhns<K>h in the root namespace, lhns<K>n inside (15 characters at most)
PICK_LOCK = Path("/tmp/lockharness-netns.lock")  # two sessions never pick the same K
READY_WITHIN_S = 10.0
GONE_WITHIN_S = 5.0


class CannotMake(Exception):
    """This machine cannot make namespace hosts (a permission, a missing program)."""


def unavailable() -> str | None:
    """Why namespace hosts cannot be made here; None if they may be (``ip netns add``
    itself may still refuse: that raises CannotMake)."""
    if os.geteuid() != 0:
        return "not root: ip netns needs CAP_SYS_ADMIN"
    for program in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(program) is None:
            return f"no {program} on PATH (make setup installs iproute2 and openssh-client)"
    if not os.access(SSHD, os.X_OK):
        return f"no {SSHD} (make setup installs Debian's openssh-server)"
    return None


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise CannotMake(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@dataclass
class NetnsHost:
    k: int
    sshd: subprocess.Popen[bytes] | None = None

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.k}"

    @property
    def address(self) -> str:  # where its sshd listens
        return f"{SUBNET}.{self.k}.2"

    @property
    def veth(self) -> str:  # the root namespace's side
        return f"{VETH_PREFIX}{self.k}h"

    @property
    def inode(self) -> int:
        """The namespace's inode: what /proc/self/ns/net shows to a process inside it."""
        return os.stat(f"/run/netns/{self.namespace}").st_ino

    def pids(self) -> set[int]:
        """Every process in the namespace."""
        done = subprocess.run(
            ["ip", "netns", "pids", self.namespace], capture_output=True, text=True, timeout=30
        )
        return {int(pid) for pid in done.stdout.split()} if done.returncode == 0 else set()


@dataclass
class NetnsHosts:
    hosts: list[NetnsHost]
    ssh_config: Path  # the client's: the key, no known-hosts file

    def tx(self, host: NetnsHost, python: str, chdir: Path) -> str:
        """An xdist ``--tx`` spec: ssh into ``host`` with our ssh_config, run ``python``
        in ``chdir`` (execnet's XSpec keys)."""
        return (
            f"ssh_config={self.ssh_config}//ssh=root@{host.address}//python={python}//chdir={chdir}"
        )


def _existing() -> tuple[set[str], str]:
    return set(_ip("netns", "list").split()), _ip("-o", "-4", "addr", "show")


def _pick(count: int) -> list[NetnsHost]:
    """``count`` hosts on subnets no namespace or address of this machine uses now, their
    namespaces made (under PICK_LOCK, so that another session sees them taken)."""
    made: list[NetnsHost] = []
    with PICK_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        namespaces, addresses = _existing()
        try:
            for k in range(1, 255):
                host = NetnsHost(k)
                if len(made) == count:
                    break
                if host.namespace in namespaces or f" {SUBNET}.{k}." in addresses:
                    continue
                _ip("netns", "add", host.namespace)
                made.append(host)
            if len(made) < count:
                raise CannotMake(f"no free subnet {SUBNET}.K.0/30 for {count} hosts")
        except BaseException:
            _remove(made)
            raise
    return made


def _wire(host: NetnsHost) -> None:
    """The veth pair, its addresses, both ends and the namespace's loopback up."""
    inside = f"{VETH_PREFIX}{host.k}n"
    _ip("link", "add", host.veth, "type", "veth", "peer", "name", inside)
    _ip("link", "set", inside, "netns", host.namespace)
    _ip("addr", "add", f"{SUBNET}.{host.k}.1/30", "dev", host.veth)
    _ip("link", "set", host.veth, "up")
    _ip("-n", host.namespace, "addr", "add", f"{host.address}/30", "dev", inside)
    _ip("-n", host.namespace, "link", "set", inside, "up")
    _ip("-n", host.namespace, "link", "set", "lo", "up")


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )


SSHD_CONFIG = """\
ListenAddress {address}
Port 22
HostKey {directory}/host_key
PidFile {directory}/sshd.pid
AuthorizedKeysFile {keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
# The key and this file are in the test's temporary directory, below /tmp.
StrictModes no
# PAM's session modules (pam_loginuid) refuse logins in some containers; root is not
# locked (its password is "*", not "!"), so sshd's own account checks pass.
UsePAM no
LogLevel VERBOSE
"""

SSH_CONFIG = """\
Host *
  User root
  IdentityFile {key}
  IdentitiesOnly yes
  BatchMode yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  ConnectTimeout 10
"""


def _start_sshd(host: NetnsHost, directory: Path, keys: Path) -> None:
    directory.mkdir()
    _keygen(directory / "host_key")
    config = directory / "sshd_config"
    config.write_text(SSHD_CONFIG.format(address=host.address, directory=directory, keys=keys))
    log = (directory / "sshd.log").open("wb")
    with log:  # sshd keeps its own descriptor
        host.sshd = subprocess.Popen(
            ["ip", "netns", "exec", host.namespace, str(SSHD), "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + READY_WITHIN_S
    while time.monotonic() < deadline:
        if host.sshd.poll() is not None:
            raise RuntimeError(f"sshd in {host.namespace} exited:\n{_tail(directory)}")
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex((host.address, 22)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd in {host.namespace} did not listen:\n{_tail(directory)}")


def _tail(directory: Path) -> str:
    return (directory / "sshd.log").read_text(errors="replace")[-2000:]


def _kill_all(hosts: list[NetnsHost]) -> list[str]:
    """SIGKILL every process in each namespace until none is left; what would not go."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while True:
        alive = {host.namespace: host.pids() for host in hosts}
        if not any(alive.values()):
            break
        if time.monotonic() > deadline:
            return [f"{ns}: pids {sorted(pids)} would not die" for ns, pids in alive.items()]
        for pids in alive.values():
            for pid in pids:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    for host in hosts:
        if host.sshd is not None:
            host.sshd.wait(timeout=GONE_WITHIN_S)  # reaped: no zombie of ours
    return []


def _remove(hosts: list[NetnsHost]) -> list[str]:
    """Delete the namespaces (their side of each pair goes with them) and our veths."""
    problems = []
    for host in hosts:
        for args in (("netns", "del", host.namespace), ("link", "del", host.veth)):
            done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
            gone = "No such file" in done.stderr or "Cannot find device" in done.stderr
            if done.returncode != 0 and not gone:
                problems.append(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return problems


def leftovers(hosts: list[NetnsHost]) -> list[str]:
    """Whatever of these hosts is still on the machine: a namespace, a veth, a process."""
    namespaces, _ = _existing()
    links = _ip("-o", "link", "show")
    left = [f"namespace {h.namespace}" for h in hosts if h.namespace in namespaces]
    left += [f"veth {h.veth}" for h in hosts if f" {h.veth}@" in links]
    left += [
        f"sshd {h.sshd.pid} of {h.namespace}"
        for h in hosts
        if h.sshd is not None and h.sshd.poll() is None
    ]
    return left


@contextmanager
def namespace_hosts(count: int, directory: Path) -> Iterator[NetnsHosts]:
    """``count`` namespace hosts, each with its sshd listening; all gone at the end
    (CannotMake when this machine refuses a namespace: the caller skips or fails)."""
    directory.mkdir(parents=True, exist_ok=True)
    _keygen(directory / "client_key")
    keys = directory / "authorized_keys"
    keys.write_text((directory / "client_key.pub").read_text())
    ssh_config = directory / "ssh_config"
    ssh_config.write_text(SSH_CONFIG.format(key=directory / "client_key"))
    # sshd refuses to start without it; the ssh service's start makes it, and it stays
    # (empty, like the service's): another session's sshd may be using it now.
    SSHD_PRIVSEP.mkdir(mode=0o755, exist_ok=True)
    hosts = _pick(count)
    try:
        for host in hosts:
            _wire(host)
            _start_sshd(host, directory / host.namespace, keys)
        yield NetnsHosts(hosts, ssh_config)
    finally:
        problems = _kill_all(hosts) + _remove(hosts)
        problems += leftovers(hosts)
        if problems:
            raise RuntimeError("namespace hosts not cleaned up: " + "; ".join(problems))
