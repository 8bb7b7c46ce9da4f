"""A reference topology as the oracle runs it: how to build it with streams_rt's DSL, and the serdes
of the topics scenarios write (inputs) and read (outputs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams_rt.topology import Serde, Serdes, Topology

S, L = Serdes.string(), Serdes.int64()


@dataclass(frozen=True)
class Reference:
    """`properties`: what both drivers get (Kafka's names)."""

    build: Callable[[], Topology]
    inputs: dict[str, tuple[Serde[Any], Serde[Any]]]
    outputs: dict[str, tuple[Serde[Any], Serde[Any]]]
    properties: dict[str, Any] = field(default_factory=dict)


def strings(*topics: str) -> dict[str, tuple[Serde[Any], Serde[Any]]]:
    return {topic: (S, S) for topic in topics}
