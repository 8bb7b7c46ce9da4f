"""A KRaft cluster of several combined broker+controller nodes on loopback, for development and for
tests of broker failures (a leader killed, a broker bounced, the active controller killed): node
`i` lives in `<directory>/node-<i>/`, a DevBroker directory of its own; `cluster.json` keeps the
cluster id and every node's ports, so a node (or the whole cluster) restarted keeps its address
and its place in the quorum. Every node is a controller voter; the broker's internal topics get
as many replicas as there are nodes, and `min.insync.replicas` is 2 (broker_files.Quorum)."""

from __future__ import annotations

import json
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams_rt.kafka.broker_files import LOOPBACK, BrokerError, BrokerInfo, Quorum, new_cluster_id
from streams_rt.kafka.dev_broker import DevBroker, default_directory
from streams_rt.kafka.jvm import KAFKA_LIBS

CLUSTER_FILE = "cluster.json"
_BECAME_CONTROLLER = re.compile(r"\[QuorumController id=(\d+)\] Becoming the active controller at epoch (\d+)")


@dataclass(frozen=True)
class ClusterInfo:
    """The running nodes, by node id."""

    nodes: dict[int, BrokerInfo]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(info.bootstrap_servers for _, info in sorted(self.nodes.items()))


def is_cluster(directory: Path) -> bool:
    """Whether `directory` holds a cluster (else a single broker, or nothing yet)."""
    return (directory / CLUSTER_FILE).is_file()


class DevCluster:
    def __init__(self, directory: Path | str | None = None, brokers: int = 3, java: str | None = None,
                 libs: Path = KAFKA_LIBS, heap: str = "512m") -> None:
        """`brokers` nodes (an existing cluster keeps the count it was made with: BrokerError if it
        differs)."""
        if brokers < 2:
            raise BrokerError(f"a cluster has 2 nodes or more, not {brokers}; one node is `dev-broker start`")
        self.directory = (Path(directory) if directory else default_directory()).resolve()
        layout = self._layout(brokers)
        voters = tuple((node, ports["controller_port"]) for node, ports in sorted(layout["nodes"].items()))
        self.nodes = {
            node: DevBroker(self.directory / f"node-{node}", port=ports["port"], java=java, libs=libs, heap=heap,
                            quorum=Quorum(node, voters, layout["cluster_id"]))
            for node, ports in sorted(layout["nodes"].items())
        }

    def start(self, owned: bool = True) -> ClusterInfo:
        """Start every node that is not running, all before waiting for any (a node answers once a
        majority of the quorum runs); owned nodes die with the calling thread, as DevBroker's."""
        launched = {node: broker.launch(owned) for node, broker in self.nodes.items()}
        return ClusterInfo({node: found if isinstance(found, BrokerInfo) else found.ready()
                            for node, found in launched.items()})

    def status(self) -> ClusterInfo | None:
        """The nodes running now (None: none)."""
        running = {node: info for node, broker in self.nodes.items() if (info := broker.status()) is not None}
        return ClusterInfo(running) if running else None

    def stop(self) -> bool:
        """Stop every node (SIGTERM), all at once: the last node of a quorum stopped alone waits for a
        controller majority that is gone (60 s, then SIGKILL). False when none was running."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            return any(list(pool.map(lambda broker: broker.stop(), self.nodes.values())))

    def node(self, node_id: int) -> DevBroker:
        return self.nodes[node_id]

    def controller(self) -> tuple[int, int] | None:
        """(node id, epoch) of the latest active controller the nodes' logs name (KRaft's epochs only
        grow, so the highest is the current one until its node dies and another is elected); None
        before the first election. Clients cannot ask: in KRaft a broker names a random live broker
        as the "controller" of DescribeCluster (KIP-919)."""
        elected = []
        for broker in self.nodes.values():
            try:
                text = broker.log_file.read_text(errors="replace")
            except FileNotFoundError:
                continue
            elected += [(int(epoch), int(node)) for node, epoch in _BECAME_CONTROLLER.findall(text)]
        if not elected:
            return None
        epoch, node = max(elected)
        return node, epoch

    def _layout(self, brokers: int) -> dict[str, Any]:
        """cluster.json, made now for a new cluster: the cluster id and each node's two ports."""
        path = self.directory / CLUSTER_FILE
        if path.is_file():
            try:
                raw = json.loads(path.read_text())
                layout = {"cluster_id": str(raw["cluster_id"]),
                          "nodes": {int(n): {"port": int(p["port"]), "controller_port": int(p["controller_port"])}
                                    for n, p in raw["nodes"].items()}}
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise BrokerError(f"{path} cannot be read ({e}); delete the cluster's directory to start afresh") \
                    from None
            if len(layout["nodes"]) != brokers:
                raise BrokerError(f"the cluster in {self.directory} has {len(layout['nodes'])} nodes, not {brokers}")
            return layout
        ports = iter(_free_ports(2 * brokers))
        layout = {"cluster_id": new_cluster_id(),
                  "nodes": {node: {"port": next(ports), "controller_port": next(ports)} for node in
                            range(1, brokers + 1)}}
        self.directory.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(layout))
        return layout


def _free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (all held open until every one is chosen, so none repeats)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind((LOOPBACK, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
