"""Where a client connects: a named node reached at host:port (usually a Toxiproxy proxy)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str  # the node's name, e.g. "n3"; what a lease's grants list
    host: str
    port: int

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "host": self.host, "port": self.port}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Endpoint:
        return cls(name=str(raw["name"]), host=str(raw["host"]), port=int(raw["port"]))
