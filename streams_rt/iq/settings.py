"""The query endpoint's settings, read once from the application's resolved configuration."""

from __future__ import annotations

from dataclasses import dataclass

from streams_rt.config import StreamsConfig
from streams_rt.config.registry import (
    APPLICATION_SERVER,
    IQ_BIND_HOST,
    IQ_ENABLED,
    IQ_PAGE_SIZE_MAX,
    IQ_PORT,
    IQ_PROXY_TIMEOUT_MS,
)

DEFAULT_PAGE_SIZE = 100


@dataclass(frozen=True)
class QuerySettings:
    enabled: bool = True
    bind_host: str = "127.0.0.1"
    port: int = 0
    advertised: str | None = None  # application.server: what the group is told (None: the bound address)
    page_size_max: int = 1_000
    proxy_timeout_s: float = 10.0

    @classmethod
    def from_config(cls, config: StreamsConfig) -> QuerySettings:
        advertised = config.get(APPLICATION_SERVER)
        port = config.get(IQ_PORT)
        if port == 0 and advertised is not None:
            port = int(advertised.rpartition(":")[2])
        return cls(
            enabled=config.get(IQ_ENABLED),
            bind_host=config.get(IQ_BIND_HOST),
            port=port,
            advertised=advertised,
            page_size_max=config.get(IQ_PAGE_SIZE_MAX),
            proxy_timeout_s=config.get(IQ_PROXY_TIMEOUT_MS) / 1000,
        )

    @property
    def default_page_size(self) -> int:
        return min(DEFAULT_PAGE_SIZE, self.page_size_max)
