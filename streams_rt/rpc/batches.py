"""The host's batch endpoint, both sides of it: a batch request (task, generation, offset range per
input partition) as a Flight ticket, typed refusals and failures carried in the error's extra info,
and the client a planner uses to run and commit batches on the owner host."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from streams_rt.protocol import TaskId, TopicPartition
from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.errors import GroupErrorException
from streams_rt.rpc.tasks import TaskProgress, parse_progress
from streams_rt.rpc.transport import call_options, flight_client

MAX_TICKET_BYTES = 1 << 20


class BatchRequestInvalid(ValueError):
    """A ticket or action body that is not a well-formed batch request."""


@dataclass(frozen=True)
class BatchRequest:
    task: TaskId
    generation: int
    ranges: Mapping[TopicPartition, tuple[int, int]]  # [start, end) per input partition
    # The planner's number for the micro-batch (Spark's batch id), recorded with the task's commit so
    # that interactive queries can say which batch a state is from; None when the planner has none.
    batch_id: int | None = None

    def to_bytes(self) -> bytes:
        ranges = [[tp.topic, tp.partition, s, e] for tp, (s, e) in sorted(self.ranges.items())]
        body: dict[str, Any] = {"task": str(self.task), "generation": self.generation, "ranges": ranges}
        if self.batch_id is not None:
            body["batch"] = self.batch_id
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, body: bytes) -> BatchRequest:
        if len(body) > MAX_TICKET_BYTES:
            raise BatchRequestInvalid(f"a batch request of {len(body)} bytes is over {MAX_TICKET_BYTES}")
        try:
            raw = json.loads(body)
            task = TaskId.parse(raw["task"])
            generation = raw["generation"]
            ranges = {}
            for topic, partition, start, end in raw["ranges"]:
                if not (isinstance(topic, str) and all(_offset(v) for v in (partition, start, end))):
                    raise ValueError(f"bad range {[topic, partition, start, end]!r:.80}")
                ranges[TopicPartition(topic, partition)] = (start, end)
            if not _offset(generation + 1):
                raise ValueError("bad generation")
            batch_id = raw.get("batch")
            if batch_id is not None and not _offset(batch_id):
                raise ValueError("bad batch id")
        except (ValueError, KeyError, TypeError) as e:
            raise BatchRequestInvalid(f"not a batch request: {e}") from None
        return cls(task, generation, ranges, batch_id)


def _offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


class BatchError(Exception):
    """What the host said when it would not (or could not) run a batch. `code` is a Refusal name
    (NOT_OWNER, RESTORING, OUT_OF_ORDER, WRONG_PARTITIONS), FAILED (the batch raised: `detail` names
    the record), UNREACHABLE (the connection to the host failed: refused, reset, no route, or a TLS
    handshake that failed; gRPC's UNAVAILABLE) or UNAVAILABLE (no answer in time, or the host could
    not read its input now). Retriable ones may succeed elsewhere or later."""

    RETRIABLE = frozenset({"NOT_OWNER", "RESTORING", "OUT_OF_ORDER", "UNAVAILABLE", "UNREACHABLE"})

    def __init__(self, code: str, message: str, detail: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.detail = code, message, dict(detail or {})

    @property
    def retriable(self) -> bool:
        return self.code in self.RETRIABLE

    def to_flight(self) -> flight.FlightServerError:
        info = json.dumps({"code": self.code, "message": self.message[:2000], "detail": self.detail}).encode()
        # FlightError(message, extra_info) in pyarrow; pyarrow-stubs leaves the constructor out.
        return flight.FlightServerError(f"{self.code}: {self.message[:2000]}", extra_info=info)  # type: ignore[call-arg]

    @classmethod
    def from_flight(cls, error: flight.FlightError) -> BatchError:
        try:
            info = json.loads(error.extra_info or b"{}")
            return cls(str(info["code"]), str(info.get("message", "")), info.get("detail") or {})
        except (ValueError, KeyError, TypeError):
            return cls("UNAVAILABLE", str(error).splitlines()[0][:500])


class HostClient:
    """Runs batches on one host (its endpoint, from task_status) and acknowledges their commit."""

    def __init__(self, endpoint: str, timeout_s: float = 600.0, secret: SharedSecret | None = None,
                 tls_root_certs: bytes | None = None) -> None:
        """`secret` defaults to the one the driver handed this process (from the environment);
        `tls_root_certs` (PEM) are what a `grpc+tls://` host's certificate must lead to."""
        self.endpoint = endpoint
        self._client = flight_client(endpoint, tls_root_certs)
        chosen = secret if secret is not None else SharedSecret.from_environment()
        headers = chosen.call_headers() if chosen is not None else []
        self._options = call_options(timeout_s, headers)

    def run_batch(self, request: BatchRequest) -> pa.Table:
        """The batch's output rows; raises BatchError."""
        try:
            return self._client.do_get(flight.Ticket(request.to_bytes()), self._options).read_all()
        except (flight.FlightError, OSError) as e:
            raise self._failure(e) from None

    def commit(self, request: BatchRequest) -> None:
        """Spark (or the batch loop) has taken the batch's output: the host may forget it."""
        self._action("commit", request.to_bytes())

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self._action("status", b"{}"))
        return result

    def progress(self) -> dict[TaskId, TaskProgress]:
        """Each task active on the host now: its committed positions and the batch it applied last."""
        try:
            return parse_progress(json.loads(self._action("progress", b"{}")))
        except (ValueError, GroupErrorException) as e:
            raise BatchError("INVALID", f"{self.endpoint}: malformed progress: {e}") from None

    def restart(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Ask the host to close and start again with new settings or code (the `restart` action's
        JSON: properties, python, env, latest_supported_version); BatchError INVALID if it refuses."""
        result: dict[str, Any] = json.loads(self._action("restart", json.dumps(request).encode()))
        return result

    def drain(self, reason: str) -> dict[str, Any]:
        """Ask the host to drain: its tasks move to the others as they catch up, then it stops."""
        result: dict[str, Any] = json.loads(self._action("drain", json.dumps({"reason": reason}).encode()))
        return result

    def _action(self, name: str, body: bytes) -> bytes:
        try:
            results = list(self._client.do_action(flight.Action(name, body), self._options))
        except (flight.FlightError, OSError) as e:
            raise self._failure(e) from None
        return results[0].body.to_pybytes() if results else b""

    def _failure(self, error: flight.FlightError | OSError) -> BatchError:
        """A failed call as a BatchError: the host's own refusal, or what kept the call from it."""
        if isinstance(error, flight.FlightUnauthenticatedError):
            return BatchError("UNAUTHENTICATED", f"{self.endpoint}: {error}")
        if isinstance(error, flight.FlightUnavailableError):  # the transport's: the host never answered
            return BatchError("UNREACHABLE", f"{self.endpoint}: {str(error).splitlines()[0][:500]}")
        if isinstance(error, flight.FlightError):
            return BatchError.from_flight(error)
        return BatchError("UNAVAILABLE", f"{self.endpoint}: {error}")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HostClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
