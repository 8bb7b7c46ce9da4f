"""Topologies: the DSL (StreamsBuilder, KStream, KTable, time, session and sliding windowed
aggregations, stream-table and stream-stream joins, suppress),
column operations that run on whole batches (Words, Split, Field, Value), the processor API, serdes,
and subtopologies split as Kafka Streams splits them. Pure: no I/O; the task hosts run what it
describes."""

from streams_rt.topology.columns import Field, Split, Value, Words
from streams_rt.topology.dsl import (
    BranchedStream,
    KGroupedStream,
    KStream,
    KTable,
    StreamsBuilder,
    TimeWindowedStream,
)
from streams_rt.topology.errors import TopologyError
from streams_rt.topology.joins import JoinWindows
from streams_rt.topology.processor import BaseProcessor, Processor, ProcessorContext, PunctuationType
from streams_rt.topology.record import Record, Windowed
from streams_rt.topology.serdes import Serde, SerdeError, Serdes
from streams_rt.topology.stores import StoreDefinition, Stores
from streams_rt.topology.suppress import BufferConfig, Suppressed
from streams_rt.topology.topology import Subtopology, Topology, TopologyLayout
from streams_rt.topology.windowed import SessionWindowedStream, SlidingWindowedStream
from streams_rt.topology.windows import (
    EmitStrategy,
    HoppingWindows,
    SessionWindows,
    SlidingWindows,
    TimeWindows,
    TumblingWindows,
    WindowedSerde,
)

__all__ = [
    "BaseProcessor",
    "BranchedStream",
    "BufferConfig",
    "EmitStrategy",
    "Field",
    "HoppingWindows",
    "JoinWindows",
    "KGroupedStream",
    "KStream",
    "KTable",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "Serde",
    "SerdeError",
    "Serdes",
    "SessionWindowedStream",
    "SessionWindows",
    "SlidingWindowedStream",
    "SlidingWindows",
    "Split",
    "StoreDefinition",
    "Stores",
    "StreamsBuilder",
    "Subtopology",
    "Suppressed",
    "TimeWindowedStream",
    "TimeWindows",
    "Topology",
    "TopologyError",
    "TopologyLayout",
    "TumblingWindows",
    "Value",
    "Windowed",
    "WindowedSerde",
    "Words",
]
