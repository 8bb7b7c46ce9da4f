"""Each host's `group.instance.id` (KIP-345 static membership) from the application's one value.

An application sets `group.instance.id` once, for all its hosts; each host appends its own stable
name (an executor's Spark id, a local host's name), as Kafka Streams appends each stream thread's
index to its consumers' id. The name must outlive the host's restarts, so that a restarted host keeps
its tasks without a rebalance, and must be its own: two hosts with one id would fence each other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streams_rt.config.registry import GROUP_INSTANCE_ID


def with_host_instance_id(properties: Mapping[str, Any], host_name: str) -> dict[str, Any]:
    """`properties` with the host's own group.instance.id (unchanged without one: dynamic members)."""
    prefix = properties.get(GROUP_INSTANCE_ID.name)
    if prefix is None:
        return dict(properties)
    return {**properties, GROUP_INSTANCE_ID.name: f"{prefix}-{host_name}"}
