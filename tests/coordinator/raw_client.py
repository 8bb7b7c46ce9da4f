"""A test-only process that makes raw coordinator calls with GroupClient, whose secret is whatever
its environment holds (as a host started by the driver has it), and prints one JSON line per call:
{"action", "outcome": "answered" | "refused" | "unavailable", "error", "message"}.
Usage: python -m tests.coordinator.raw_client --coordinator ADDR [--tls-root-certs PEM] CALLS_JSON
where CALLS_JSON is a list of [action, request fields]."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from streams_rt.rpc.client import AuthenticationRefused, CoordinatorUnavailable, GroupClient
from streams_rt.rpc.messages import REQUESTS


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--coordinator", required=True)
    p.add_argument("--tls-root-certs", type=Path)
    p.add_argument("calls")
    args = p.parse_args()
    roots = args.tls_root_certs.read_bytes() if args.tls_root_certs else None
    client = GroupClient(args.coordinator, timeout_s=10, tls_root_certs=roots)
    try:
        for action, fields in json.loads(args.calls):
            request_cls, response_cls = REQUESTS[action]
            try:
                resp = client.call(request_cls.from_bytes(json.dumps(fields).encode()), response_cls)
                out = {"outcome": "answered", "error": resp.error, "message": resp.message}
            except AuthenticationRefused as e:
                out = {"outcome": "refused", "message": str(e)}
            except CoordinatorUnavailable as e:
                out = {"outcome": "unavailable", "message": str(e)}
            print(json.dumps({"action": action, **out}), flush=True)
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
