"""Errors of an invalid topology, each naming the node (or the part) it is about."""

from __future__ import annotations


class TopologyError(ValueError):
    def __init__(self, node: str, reason: str) -> None:
        self.node, self.reason = node, reason
        super().__init__(f"invalid topology at {node}: {reason}")
