"""The coordinator's RPC messages: explicit JSON schemas, validated field by field on both sides.

Every action body and result is one JSON object. Field types are checked, unknown fields are
refused, and Kafka user data travels as base64 of its exact bytes. Nothing is unpickled. Requests
are bounded as Kafka's broker bounds them: ids as long as Kafka allows, integers in int32, JSON no
deeper than the schemas need; error messages quote only a short prefix of a bad value."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import re
import types
import typing
from typing import Any, ClassVar, TypeVar

from streams_rt.protocol import RebalanceProtocol
from streams_rt.rpc.errors import GroupError, GroupErrorException, abbreviate

M = TypeVar("M", bound="Message")

# The rebalance protocol travels as its name; the typed accessors below give the enum back.
PROTOCOLS = tuple(protocol.name for protocol in RebalanceProtocol)
MAX_JSON_DEPTH = 8  # the deepest schema (describe's members) needs 4
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Kafka's JoinGroupRequest.validateGroupInstanceId (Topic's rule); application.id prefixes topic names.
MAX_ID_LENGTH = 249
LEGAL_ID = re.compile(r"[a-zA-Z0-9._-]+")
# The coordinator makes member ids as `<group.instance.id or "member">-<uuid4>`.
MAX_MEMBER_ID_LENGTH = MAX_ID_LENGTH + 37
MAX_REASON_LENGTH = 255  # Kafka's JoinGroupRequest.maybeTruncateReason

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))
_INNERMOST_PAIR = re.compile(rb"\[\]|\{\}")


def nests_at_most(body: bytes, depth: int) -> bool:
    """Whether `body`'s arrays and objects nest at most `depth` deep, checked before parsing (a deep
    body would otherwise exhaust the parser's recursion). Linear passes in C: strings dropped, then
    the brackets alone, innermost pairs removed once per level."""
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_A_BRACKET)
    for _ in range(depth):
        if not brackets:
            return True
        brackets = _INNERMOST_PAIR.sub(b"", brackets)
    return not brackets


class Message:
    """Base of every request and response; subclasses are frozen dataclasses with an ACTION name."""

    ACTION: ClassVar[str]
    # Set on each subclass by @dataclass; declared here so that dataclasses.fields() takes any message.
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_bytes(self) -> bytes:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        return json.dumps(out, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls: type[M], body: bytes) -> M:
        """Parse and validate; raises GroupErrorException(INVALID_REQUEST) naming the bad field."""
        if not nests_at_most(body, MAX_JSON_DEPTH):
            raise _invalid(cls, f"body is not JSON nested at most {MAX_JSON_DEPTH} deep")
        try:
            raw = json.loads(body.decode("utf-8"))
        except ValueError as e:  # not UTF-8, not JSON, or an integer beyond Python's digit limit
            raise _invalid(cls, f"body is not UTF-8 JSON: {e}") from None
        if not isinstance(raw, dict):
            raise _invalid(cls, "body must be a JSON object")
        schema = _schema(cls)  # type: ignore[arg-type]  # mypy#11470: mypy finds type[M] unhashable
        unknown = sorted(set(raw) - set(schema))
        if unknown:
            raise _invalid(cls, f"unknown fields {abbreviate(unknown, 80)}")
        values: dict[str, Any] = {}
        for name, (hint, required) in schema.items():
            if name not in raw:
                if required:
                    raise _invalid(cls, f"missing field {name!r}")
                continue
            values[name] = _check(cls, name, hint, raw[name])
        msg = cls(**values)
        msg.validate()
        return msg

    def validate(self) -> None:
        """Cross-field checks; overridden where a message has any."""


@functools.cache
def _schema(cls: type[Message]) -> dict[str, tuple[Any, bool]]:
    """Each field's type and whether it is required; resolved once per class (resolving the
    annotations costs more than parsing a message)."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: (hints[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        for f in dataclasses.fields(cls)
    }


def _invalid(cls: type, why: str) -> GroupErrorException:
    return GroupErrorException(GroupError.INVALID_REQUEST, f"{cls.__name__}: {why}")


def _check(cls: type, name: str, hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check(cls, name, inner, value)
    if hint is bytes:
        if not isinstance(value, str):
            raise _invalid(cls, f"field {name!r} must be a base64 string")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise _invalid(cls, f"field {name!r} is not valid base64") from None
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid(cls, f"field {name!r} must be an integer, got {type(value).__name__}")
        return value
    if hint in (str, bool):
        if not isinstance(value, hint):
            raise _invalid(cls, f"field {name!r} must be {hint.__name__}, got {type(value).__name__}")
        return value
    if origin is list:
        (inner,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise _invalid(cls, f"field {name!r} must be a list")
        return [_check(cls, name, inner, v) for v in value]
    if hint is dict or origin is dict:
        if not isinstance(value, dict):
            raise _invalid(cls, f"field {name!r} must be an object")
        return value
    raise TypeError(f"{cls.__name__}.{name}: unsupported schema type {hint!r}")


@dataclasses.dataclass(frozen=True)
class Response(Message):
    """Fields every response starts with: a GroupError name, why, and AssignorError when relevant."""

    error: str = GroupError.NONE.value
    message: str = ""
    assignor_error: int = 0

    def validate(self) -> None:
        GroupError(self.error)

    def raise_for_error(self) -> None:
        if self.error != GroupError.NONE.value:
            raise GroupErrorException(GroupError(self.error), self.message, self.assignor_error)


# The longest each request string may be; every string field of a request has an entry.
REQUEST_STRING_LIMITS: dict[str, int] = {
    "group_id": MAX_ID_LENGTH,
    "member_id": MAX_MEMBER_ID_LENGTH,
    "group_instance_id": MAX_ID_LENGTH,
    "protocol": max(map(len, PROTOCOLS)),
    "reason": MAX_REASON_LENGTH,
    "endpoint": 1000,  # a host's batch endpoint URI
}


class Request(Message):
    """Base of the requests: the bounds every request is held to, before any field means anything."""

    group_id: str  # every request names its group (each subclass declares the field)

    def validate(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, str) and len(value) > REQUEST_STRING_LIMITS[name]:
                raise _invalid(
                    type(self), f"field {name!r} is {len(value)} characters, above the limit of"
                    f" {REQUEST_STRING_LIMITS[name]}: {abbreviate(value)}",
                )
            if isinstance(value, int) and not INT32_MIN <= value <= INT32_MAX:
                raise _invalid(type(self), f"field {name!r} is out of the int32 range: {abbreviate(value)}")
        instance_id = getattr(self, "group_instance_id", None)
        if instance_id is not None and (not LEGAL_ID.fullmatch(instance_id) or instance_id in (".", "..")):
            raise _invalid(
                type(self), f"group_instance_id must be Kafka's legal characters [a-zA-Z0-9._-], not '.' or"
                f" '..', got {abbreviate(instance_id)}",
            )


@dataclasses.dataclass(frozen=True)
class JoinRequest(Request):
    ACTION: ClassVar[str] = "join"
    group_id: str
    member_id: str  # "" on a first join: the coordinator assigns one
    protocol: str  # EAGER or COOPERATIVE: what this member does with moved tasks
    user_data: bytes  # SubscriptionInfo at the version the member chose
    session_timeout_ms: int
    rebalance_timeout_ms: int  # max.poll.interval.ms
    group_instance_id: str | None = None
    capacity: int = 1  # num.stream.threads: the member's share of tasks
    generation: int = -1  # of the assignment the member holds (-1: none); a stale one is refused
    # EAGER: the member revoked everything before joining. Its subscription still reports the tasks
    # it held (so the assignor stays sticky), but they are history, not ownership claims.
    revoked_all: bool = False

    def validate(self) -> None:
        super().validate()
        if self.protocol not in PROTOCOLS:
            raise _invalid(type(self), f"protocol must be one of {PROTOCOLS}, got {abbreviate(self.protocol)}")
        if self.session_timeout_ms <= 0 or self.rebalance_timeout_ms <= 0:
            raise _invalid(type(self), "session_timeout_ms and rebalance_timeout_ms must be positive")
        if self.capacity < 1:
            raise _invalid(type(self), f"capacity must be at least 1, got {self.capacity}")

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """`protocol` as the enum (`validate` checked the name)."""
        return RebalanceProtocol[self.protocol]


@dataclasses.dataclass(frozen=True)
class JoinResponse(Response):
    member_id: str = ""


@dataclasses.dataclass(frozen=True)
class SyncRequest(Request):
    """Waits (up to wait_ms) for the member's assignment of a generation newer than `generation`."""

    ACTION: ClassVar[str] = "sync"
    group_id: str
    member_id: str
    generation: int  # the newest generation this member already holds an assignment for (-1: none)
    wait_ms: int = 500
    group_instance_id: str | None = None


@dataclasses.dataclass(frozen=True)
class SyncResponse(Response):
    ready: bool = False  # False: the round is still collecting members, ask again
    generation: int = -1
    protocol: str = RebalanceProtocol.COOPERATIVE.name  # the protocol this round was run with
    user_data: bytes = b""  # AssignmentInfo at a version this member can read

    def validate(self) -> None:
        super().validate()
        if self.ready and self.error == GroupError.NONE.value and self.protocol not in PROTOCOLS:
            raise _invalid(type(self), f"protocol must be one of {PROTOCOLS}, got {abbreviate(self.protocol)}")

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """`protocol` as the enum; `validate` checked the name of every ready assignment without an error."""
        return RebalanceProtocol[self.protocol]


@dataclasses.dataclass(frozen=True)
class HeartbeatRequest(Request):
    """Keeps the session; the answer says whether to rejoin. With wait_ms > 0 the coordinator holds
    the call until a rebalance starts or wait_ms passes, so members learn of a round at once."""

    ACTION: ClassVar[str] = "heartbeat"
    group_id: str
    member_id: str
    generation: int
    group_instance_id: str | None = None
    wait_ms: int = 0


@dataclasses.dataclass(frozen=True)
class HeartbeatResponse(Response):
    pass


@dataclasses.dataclass(frozen=True)
class LeaveRequest(Request):
    ACTION: ClassVar[str] = "leave"
    group_id: str
    member_id: str
    group_instance_id: str | None = None


@dataclasses.dataclass(frozen=True)
class LeaveResponse(Response):
    pass


@dataclasses.dataclass(frozen=True)
class DescribeRequest(Request):
    ACTION: ClassVar[str] = "describe"
    group_id: str


@dataclasses.dataclass(frozen=True)
class DescribeResponse(Response):
    state: str = ""
    generation: int = -1
    protocol: str = ""
    pending_deliveries: int = 0  # members yet to fetch the current generation's assignment
    saving: bool = False  # the current generation is formed but not saved yet: nobody can fetch it
    protocol_policy: dict[str, Any] = dataclasses.field(default_factory=dict)  # upgrade_from, override, version cap
    # member_id -> {"instance_id", "generation", "active": [task ids], "standby": [...], "revoke": [...]}
    members: dict[str, Any] = dataclasses.field(default_factory=dict)
    metrics: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class SetProtocolRequest(Request):
    """Operator toggle (KIP-125): run the group EAGER or COOPERATIVE from the next round; "" hands
    the choice back to upgrade.from and the members. Triggers a rebalance."""

    ACTION: ClassVar[str] = "set_protocol"
    group_id: str
    protocol: str

    def validate(self) -> None:
        super().validate()
        if self.protocol not in (*PROTOCOLS, ""):
            raise _invalid(type(self), f"protocol must be one of {PROTOCOLS} or empty, got {abbreviate(self.protocol)}")

    @property
    def rebalance_protocol(self) -> RebalanceProtocol | None:
        """`protocol` as the enum; None ("") hands the choice back."""
        return RebalanceProtocol[self.protocol] if self.protocol else None


@dataclasses.dataclass(frozen=True)
class SetProtocolResponse(Response):
    pass


@dataclasses.dataclass(frozen=True)
class RequestShutdownRequest(Request):
    """Operator call (KIP-725's requestShutdown): the next round, which starts now, tells every
    member SHUTDOWN_REQUESTED; each revokes its tasks, leaves and tells its host."""

    ACTION: ClassVar[str] = "request_shutdown"
    group_id: str
    reason: str = ""


@dataclasses.dataclass(frozen=True)
class RequestShutdownResponse(Response):
    pass


@dataclasses.dataclass(frozen=True)
class DrainMemberRequest(Request):
    """A host asks to be drained (`streams-rt drain`, or its executor being decommissioned): from a
    round that starts now it gets nothing new, and each of its active tasks moves once the member
    taking it is caught up; it ends with no tasks."""

    ACTION: ClassVar[str] = "drain_member"
    group_id: str
    member_id: str
    reason: str = ""


@dataclasses.dataclass(frozen=True)
class DrainMemberResponse(Response):
    pass


@dataclasses.dataclass(frozen=True)
class ReportTasksRequest(Request):
    """A host's active tasks (streams_rt.rpc.tasks.parse_reports) and the endpoint that serves their
    batches; kept for the member's current generation only. `pid`: the host's OS process id, for
    operators (0: not told, as by a host of an earlier release)."""

    ACTION: ClassVar[str] = "report_tasks"
    group_id: str
    member_id: str
    generation: int
    endpoint: str
    tasks: dict[str, Any]
    pid: int = 0


@dataclasses.dataclass(frozen=True)
class ReportTasksResponse(Response):
    pass


@dataclasses.dataclass(frozen=True)
class TaskStatusRequest(Request):
    """Every task: owner, its endpoint, phase, committed positions, inputs (for batch planning)."""

    ACTION: ClassVar[str] = "task_status"
    group_id: str


@dataclasses.dataclass(frozen=True)
class TaskStatusResponse(Response):
    generation: int = -1
    tasks: dict[str, Any] = dataclasses.field(default_factory=dict)  # task id -> TaskStatus.to_json()


@dataclasses.dataclass(frozen=True)
class StatusRequest(Request):
    """The operator's view (`streams-rt status`, the status page): hosts, tasks with state and
    lags, the last rebalances, metrics."""

    ACTION: ClassVar[str] = "status"
    group_id: str


@dataclasses.dataclass(frozen=True)
class StatusResponse(Response):
    status: dict[str, Any] = dataclasses.field(default_factory=dict)  # streams_rt.coordinator.status.build_status


@dataclasses.dataclass(frozen=True)
class ReportUnreachableRequest(Request):
    """A reader could not reach a task's owner host at `endpoint` (the connection failed, e.g. it was
    refused). The coordinator probes the endpoint itself and removes the member whose host it is
    only if it refuses connections; the answer comes before the probe ends."""

    ACTION: ClassVar[str] = "report_unreachable"
    group_id: str
    endpoint: str  # the host's batch endpoint, as task_status named it
    generation: int  # the group generation of the reader's batch plan (for the log)

    def validate(self) -> None:
        super().validate()
        if not self.endpoint:
            raise _invalid(type(self), "endpoint must not be empty")


@dataclasses.dataclass(frozen=True)
class ReportUnreachableResponse(Response):
    # True: a member reported this endpoint and a probe of it runs (or already ran when this came).
    probing: bool = False


REQUESTS: dict[str, tuple[type[Request], type[Response]]] = {
    JoinRequest.ACTION: (JoinRequest, JoinResponse),
    SyncRequest.ACTION: (SyncRequest, SyncResponse),
    HeartbeatRequest.ACTION: (HeartbeatRequest, HeartbeatResponse),
    LeaveRequest.ACTION: (LeaveRequest, LeaveResponse),
    DescribeRequest.ACTION: (DescribeRequest, DescribeResponse),
    SetProtocolRequest.ACTION: (SetProtocolRequest, SetProtocolResponse),
    RequestShutdownRequest.ACTION: (RequestShutdownRequest, RequestShutdownResponse),
    DrainMemberRequest.ACTION: (DrainMemberRequest, DrainMemberResponse),
    ReportTasksRequest.ACTION: (ReportTasksRequest, ReportTasksResponse),
    StatusRequest.ACTION: (StatusRequest, StatusResponse),
    TaskStatusRequest.ACTION: (TaskStatusRequest, TaskStatusResponse),
    ReportUnreachableRequest.ACTION: (ReportUnreachableRequest, ReportUnreachableResponse),
}
