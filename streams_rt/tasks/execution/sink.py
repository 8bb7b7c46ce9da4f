"""The sink node: a topic's bytes from the chunk's key and value columns (the bytes read from Kafka
pass through unchanged where the sink's serde is the one they were read with), handed to `emit`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams_rt.tasks.execution.base import Exec
from streams_rt.tasks.execution.chunk import Chunk
from streams_rt.topology import Serde


@dataclass(frozen=True)
class SinkOutput:
    """What a sink wrote: one topic's serialized keys and values with their timestamps, and the chunk
    they came from (a topology output's rows take typed keys and values from it)."""

    topic: str
    keys: list[bytes | None]
    values: list[bytes | None]
    timestamps: list[int]
    chunk: Chunk

    def records(self) -> zip[tuple[bytes | None, bytes | None, int]]:
        """(key, value, timestamp) per record, for the producer."""
        return zip(self.keys, self.values, self.timestamps, strict=True)


class SinkExec(Exec):
    def __init__(self, name: str, topic: str, keys: Serde[Any], values: Serde[Any],
                 emit: Callable[[SinkOutput], None]) -> None:
        super().__init__(name)
        self.topic, self.keys, self.values, self.emit = topic, keys, values, emit

    def process(self, chunk: Chunk) -> None:
        try:
            keys, values = chunk.key.serialized(self.keys), chunk.value.serialized(self.values)
        except Exception as e:
            kser, vser = self.keys.serialize, self.values.serialize
            raise self._locate(chunk.rows(), lambda r: (kser(r[0]), vser(r[1])), e) from e
        self.emit(SinkOutput(self.topic, keys, values, chunk.timestamp.values(), chunk))
