"""A test-only task host: one OS process, one GroupMember speaking real Flight RPC to the coordinator.

It records every listener callback and assignment as a JSON line in --log, so tests can check what
the member saw. --future makes it a host of the next release (latest version 12, Kafka's
FutureStreamsPartitionAssignor); --bad-user-data makes it send bytes no decoder accepts.
--state-sums and --warmups-catch-up-to fake the host's own local state (changelog offset sums)."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
import uuid

from streams_rt.assignment import RebalanceProtocol
from streams_rt.protocol import LATEST_SUPPORTED_VERSION, TaskId
from streams_rt.tasks.group_member import GroupMember, MemberStatus
from streams_rt.tasks.membership import GroupRefused, MemberConfig, MemberState
from streams_rt.tasks.streams_codec import StreamsMemberCodec
from tests.coordinator.future_codec import FUTURE_VERSION, FutureMemberCodec


class JsonLog:
    def __init__(self, path: str) -> None:
        self._f = open(path, "a", buffering=1)
        self._lock = threading.Lock()

    def write(self, event: str, **fields: object) -> None:
        with self._lock:
            self._f.write(json.dumps({"event": event, "t": time.time(), **fields}) + "\n")


class RecordingListener:
    def __init__(self, out: JsonLog, revoke_delay_s: float = 0.0) -> None:
        self.out = out
        self.revoke_delay_s = revoke_delay_s

    def on_tasks_revoked(self, tasks: frozenset[TaskId], generation: int) -> None:
        time.sleep(self.revoke_delay_s)  # a slow commit / checkpoint / close
        self.out.write("revoked", tasks=sorted(map(str, tasks)), generation=generation)

    def on_tasks_assigned(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.out.write("assigned", tasks=sorted(map(str, tasks)), generation=generation)

    def on_tasks_lost(self, tasks: frozenset[TaskId], generation: int) -> None:
        self.out.write("lost", tasks=sorted(map(str, tasks)), generation=generation)


class FakeState:
    """The host's local state as offset sums: fixed ones, plus its standbys and warm-ups reported
    caught up (at `catch_up_to`) from the first subscription after it got them."""

    def __init__(self, fixed: dict[TaskId, int], catch_up_to: int | None, out: JsonLog) -> None:
        self.fixed, self.catch_up_to, self.out = fixed, catch_up_to, out

    def __call__(self, standby: frozenset[TaskId]) -> dict[TaskId, int]:
        sums = dict(self.fixed)
        if self.catch_up_to is not None:
            sums.update({t: self.catch_up_to for t in standby})
            # Logged as reported, because a short-lived STABLE state may never be seen by the main loop.
            self.out.write("reported", caught_up=sorted(map(str, standby)))
        return sums


def parse_sums(text: str) -> dict[TaskId, int]:
    """'0_1=1000,1_2=5' -> {TaskId(0, 1): 1000, TaskId(1, 2): 5}"""
    out: dict[TaskId, int] = {}
    for item in filter(None, text.split(",")):
        task, _, value = item.partition("=")
        out[TaskId.parse(task)] = int(value)
    return out


class BadCodec(StreamsMemberCodec):
    def encode_subscription(self, version: int, active: frozenset[TaskId], standby: frozenset[TaskId]) -> bytes:
        return b"\x00\x00\x00\x0b\x00\x00\x00\x0bnot a uuid"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--coordinator", required=True)
    p.add_argument("--app", default="app")
    p.add_argument("--log", required=True)
    p.add_argument("--instance-id")
    p.add_argument("--process-id", default=None)
    p.add_argument("--protocol", default=None, choices=["EAGER", "COOPERATIVE"])
    p.add_argument("--upgrade-from", default=None)
    p.add_argument("--latest-version", type=int, default=None, help="an older member's latest version")
    p.add_argument("--version", type=int, default=None, help="subscription version to start at")
    p.add_argument("--future", action="store_true", help="a host of the next release (latest version 12)")
    p.add_argument("--state-sums", default="", help="local state offset sums: 0_1=1000,1_2=5")
    p.add_argument("--warmups-catch-up-to", type=int, default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bad-user-data", action="store_true")
    p.add_argument("--session-ms", type=int, default=1500)
    p.add_argument("--heartbeat-ms", type=int, default=200)
    p.add_argument("--max-poll-ms", type=int, default=3000)
    p.add_argument("--revoke-delay-ms", type=int, default=0)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s host[{args.instance_id}] %(name)s %(message)s")
    out = JsonLog(args.log)
    pid = uuid.UUID(args.process_id) if args.process_id else uuid.uuid4()
    state = FakeState(parse_sums(args.state_sums), args.warmups_catch_up_to, out)
    if args.bad_user_data:
        codec: StreamsMemberCodec = BadCodec(pid)
    elif args.future:
        codec = FutureMemberCodec(pid, latest_supported_version=FUTURE_VERSION, standby_offset_sums=state)
    else:
        latest = args.latest_version or LATEST_SUPPORTED_VERSION
        codec = StreamsMemberCodec(pid, latest_supported_version=latest, standby_offset_sums=state)
    config = MemberConfig(
        application_id=args.app,
        coordinator_address=args.coordinator,
        group_instance_id=args.instance_id,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        max_poll_interval_ms=args.max_poll_ms,
        upgrade_from=args.upgrade_from,
        protocol=RebalanceProtocol[args.protocol] if args.protocol else None,
        subscription_version=FUTURE_VERSION if args.future else args.version,
        num_stream_threads=args.threads,
    )
    member = GroupMember(config, codec, RecordingListener(out, args.revoke_delay_ms / 1000))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    member.start()
    out.write("started", pid=str(pid))
    last = None
    while not stop.is_set():
        def changed(s: MemberStatus, last: tuple[int, int] | None = last) -> bool:
            return s.state is not MemberState.STABLE or (s.generation, s.used_version) != last

        m = member.wait_for(changed, 0.2)
        if m is None:
            continue
        if m.state is MemberState.FAILED:
            f = m.failure
            refused = f if isinstance(f, GroupRefused) else None
            out.write("failed", error=refused.error.value if refused else type(f).__name__,
                      assignor_error=refused.assignor_error if refused else 0, message=str(f))
            member.close(leave=False)
            return 2
        if m.shutdown_requested:
            out.write("shutdown", generation=m.generation)
            member.close()
            return 0
        if m.state is MemberState.STABLE and (m.generation, m.used_version) != last:
            last = (m.generation, m.used_version)
            out.write(
                "stable", generation=m.generation, protocol=m.protocol.name, member_id=m.member_id,
                version=m.used_version, assignment_version=m.assignment_version, eager=m.behaves_eager,
                active=sorted(map(str, m.active)), standby=sorted(map(str, m.standby)),
            )
    member.close()
    out.write("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
