"""The keeper of a shared dev broker (`DevBroker.shared()`): a small process of its own that starts the
broker as its owner and stops it once no process holds a lease on it any more (broker_leases).

Several examples or scripts can so use one broker at once: the first to come starts it through a
keeper, the others find it running, and whichever finishes first leaves it to the rest. As with an
owned broker, nothing is left behind by a crash: a holder killed with SIGKILL leaves a stale lease,
which no longer counts, and the broker dies with its keeper (PR_SET_PDEATHSIG).

    python -m streams_rt.kafka.broker_keeper DIRECTORY [--port PORT]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from streams_rt.kafka.broker_files import BrokerError
from streams_rt.kafka.broker_process import is_broker_of
from streams_rt.kafka.dev_broker import DevBroker

log = logging.getLogger("streams_rt.kafka.broker_keeper")

POLL_S = 0.5


def keep(broker: DevBroker, stop: threading.Event) -> int:
    """Start the broker, then stop it once it has no holder (or on `stop`). 0 when the broker ran
    and stopped; 0 too when one already ran (its owner keeps it); 1 when the broker exited by itself."""
    info = broker.start(owned=True)
    if info.reused:
        log.info("a Kafka broker already runs on %s (pid %d): nothing to keep", broker.directory, info.pid)
        return 0
    log.info("keeping the Kafka broker at %s (pid %d) while it has holders", info.bootstrap_servers, info.pid)
    while not stop.wait(POLL_S):
        if not is_broker_of(info.pid, broker.files.server_properties):
            log.error("the Kafka broker (pid %d) exited by itself; see %s", info.pid, broker.log_file)
            return 1
        if broker.stop_if_unheld():
            log.info("no process holds the Kafka broker any more: stopped it")
            return 0
    broker.stop()
    log.info("stopped the Kafka broker on request")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start a shared dev broker and stop it when unused.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--port", type=int, default=0, help="the listener's port (0: any free one)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        return keep(DevBroker(args.directory, port=args.port), stop)
    except BrokerError as error:
        log.error("%s", error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
