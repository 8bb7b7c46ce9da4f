"""High-availability sticky task assignment (KIP-441) with cooperative hand-off (KIP-429) and
generation-aware ownership (KIP-341). Pure: no I/O, no clocks except the `now_ms` argument."""

from streams_rt.assignment.assignor import assign
from streams_rt.assignment.model import (
    AssignmentConfigs,
    AssignmentResult,
    ClientAssignment,
    ClientState,
    TaskTopology,
)
from streams_rt.protocol import RebalanceProtocol  # the assignor's input, re-exported for callers

__all__ = [
    "AssignmentConfigs",
    "AssignmentResult",
    "ClientAssignment",
    "ClientState",
    "RebalanceProtocol",
    "TaskTopology",
    "assign",
]
