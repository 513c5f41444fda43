"""The third-party lock libraries the registry offers (installed by `pip install .[clients]`)."""

from __future__ import annotations

from workloads.client_info import ClientInfo

ADAPTER_CLIENTS: tuple[ClientInfo, ...] = ()
