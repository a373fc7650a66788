"""The SDK's low-level `Server`, subclassed (no patching) to hold the discovery state and the live
backend pools, and to advertise `tools.listChanged` on every transport. Imported only when a server
is built: importing `mcp` costs about a second."""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import NotificationOptions, Server

from .backends import BackendPool
from .discovery import Discovery


class DiscoveryServer(Server[dict[str, Any]]):
    def __init__(self, discovery: Discovery, backend_pools: list[BackendPool], **kwargs: Any):
        super().__init__("toolidx", **kwargs)
        self.discovery = discovery
        self.backend_pools = backend_pools  # one per live connection; tests and stats look at them
        self.views: dict[str, Discovery] = {}  # serve --http: token label -> its scoped Discovery

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        # a new crawl changes what list_tools returns: clients must know they may ask again
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), *args, **kwargs
        )
