"""How a client on the replicated topology finds the master.

- Sentinel, as production code does: redis-py's Sentinel asks the sentinels (through this
  worker's proxies) and we translate the master's announced address to this worker's
  proxy for that node, the way a client behind NAT would.
- A pointer: a key in the resource (outside the fault domain) naming the master, which
  the nemesis moves when it promotes a replica itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workloads.endpoints import Endpoint

POINTER_KEY = "lockharness:master"


@dataclass(frozen=True)
class Discovery:
    master_name: str
    sentinels: list[Endpoint] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # "host:port" announced -> node
    pointer: Endpoint | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "master_name": self.master_name,
            "sentinels": [s.to_dict() for s in self.sentinels],
            "aliases": self.aliases,
            "pointer": self.pointer.to_dict() if self.pointer else None,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Discovery:
        pointer = raw.get("pointer")
        return cls(
            master_name=str(raw["master_name"]),
            sentinels=[Endpoint.from_dict(s) for s in raw.get("sentinels", [])],  # type: ignore[union-attr]
            aliases=dict(raw.get("aliases", {})),  # type: ignore[call-overload]
            pointer=Endpoint.from_dict(pointer) if pointer else None,  # type: ignore[arg-type]
        )
