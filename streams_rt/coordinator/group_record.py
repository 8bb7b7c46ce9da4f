"""The part of the group that must survive a coordinator restart, kept small: the generation and,
per member, who it is and which tasks its last assignment gave it. With it a restarted coordinator
recognises the members that come back, so they keep their tasks instead of losing them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams_rt.protocol import RebalanceProtocol


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def _protocol_name(value: Any) -> bool:
    return isinstance(value, str) and value in RebalanceProtocol.__members__


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    instance_id: str | None
    protocol: RebalanceProtocol
    capacity: int
    session_timeout_ms: int
    rebalance_timeout_ms: int
    generation: int  # of its last assignment
    active: tuple[str, ...]
    standby: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.member_id, "instance": self.instance_id, "protocol": self.protocol.name,
            "capacity": self.capacity, "session_ms": self.session_timeout_ms, "rebalance_ms": self.rebalance_timeout_ms,
            "generation": self.generation, "active": list(self.active), "standby": list(self.standby),
        }

    @classmethod
    def from_json(cls, raw: Any) -> MemberRecord:
        """Raises ValueError for anything but the shape to_json writes."""
        ints = ("capacity", "session_ms", "rebalance_ms", "generation")
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("id"), str)
            or not _protocol_name(raw.get("protocol"))
            or not (raw.get("instance") is None or isinstance(raw.get("instance"), str))
            or not all(isinstance(raw.get(k), int) for k in ints)
            or not all(_str_list(raw.get(k)) for k in ("active", "standby"))
        ):
            raise ValueError(f"not a member record: {str(raw)[:200]}")
        return cls(
            raw["id"], raw["instance"], RebalanceProtocol[raw["protocol"]], raw["capacity"], raw["session_ms"],
            raw["rebalance_ms"], raw["generation"], tuple(raw["active"]), tuple(raw["standby"]),
        )


@dataclass(frozen=True)
class GroupRecord:
    generation: int
    protocol: RebalanceProtocol | None = None  # of the last round; written as its name ("" for none)
    members: tuple[MemberRecord, ...] = ()

    def to_json(self) -> dict[str, Any]:
        protocol = self.protocol.name if self.protocol is not None else ""
        return {"generation": self.generation, "protocol": protocol, "members": [m.to_json() for m in self.members]}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> GroupRecord:
        """Raises ValueError for anything but the shape to_json writes; records saved before members
        or the protocol were kept read as having none."""
        if (
            not isinstance(raw.get("generation"), int)
            or not (raw.get("protocol", "") == "" or _protocol_name(raw.get("protocol")))
            or not isinstance(raw.get("members", []), list)
        ):
            raise ValueError(f"not a group record: {str(raw)[:200]}")
        members = tuple(MemberRecord.from_json(m) for m in raw.get("members", []))
        protocol = raw.get("protocol", "")
        return cls(raw["generation"], RebalanceProtocol[protocol] if protocol else None, members)
