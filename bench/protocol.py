"""Encode+decode time of our user-data codecs against Kafka Streams' own Java classes, same run.

Cases: a v11 subscription with 10,000 task offset sums, and a v11 assignment with 10,000 active tasks
(plus standby tasks and active/standby partitions by host for a 20-host group). One round is decode
then encode of Kafka's bytes; each side reports the median over its timed rounds, Java after a JIT
warm-up. Run: .venv/bin/python bench/protocol.py [--rounds N] [--warmup N]"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streams_rt.protocol import (
    OFFSET_SUM_RUNNING_ACTIVE,
    AssignmentInfo,
    FutureSubscriptionInfo,
    HostInfo,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
    decode_assignment,
    decode_subscription,
)
from tests.protocol.harness import KafkaJava, assignment_request, subscription_request
from tests.protocol.samples import Decoder, UserData

TASKS = 10_000


def big_subscription() -> SubscriptionInfo:
    sums = {
        TaskId(s, p): OFFSET_SUM_RUNNING_ACTIVE if p % 4 == 0 else s * 1_000_000 + p
        for s in range(100)
        for p in range(100)
    }
    return SubscriptionInfo.for_version(
        11,
        uuid.UUID(int=7),
        user_endpoint="host-17.example.com:8080",
        task_offset_sums=sums,
        client_tags={"zone": "eu-1"},
    )


def big_assignment() -> AssignmentInfo:
    topics = [f"topic-{i}" for i in range(10)]
    partitions = [TopicPartition(t, p) for t in topics for p in range(TASKS // len(topics))]
    hosts = [HostInfo(f"host-{i}.example.com", 8080) for i in range(20)]
    share = len(partitions) // len(hosts)
    by_host = {h: partitions[i * share : (i + 1) * share] for i, h in enumerate(hosts)}
    return AssignmentInfo.for_version(
        11,
        active_tasks=[TaskId(i // 1000, i % 1000) for i in range(TASKS)],
        standby_tasks={TaskId(20, i): [partitions[i]] for i in range(2000)},
        partitions_by_host=by_host,
        standby_partitions_by_host={h: by_host[hosts[(i + 1) % len(hosts)]] for i, h in enumerate(hosts)},
        next_rebalance_ms=1_700_000_000_000,
    )


def python_median_ns(data: bytes, decode: Decoder, rounds: int, warmup: int) -> float:
    times = []
    for i in range(warmup + rounds):
        start = time.perf_counter_ns()
        decoded = decode(data)
        assert not isinstance(decoded, FutureSubscriptionInfo)  # our own version's bytes
        decoded.encode()
        if i >= warmup:
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=300, help="Java warm-up rounds (Python gets 3)")
    args = parser.parse_args()
    java = KafkaJava()
    try:
        cases: list[tuple[str, str, UserData, Decoder]] = [
            ("v11 subscription, 10,000 offset sums", "subscription", big_subscription(), decode_subscription),
            ("v11 assignment, 10,000 tasks", "assignment", big_assignment(), decode_assignment),
        ]
        print(f"decode+encode per round, median of {args.rounds} rounds; Java warmed with {args.warmup} rounds first")
        print(f"{'case':<40}{'bytes':>9}{'python ms':>12}{'kafka java ms':>15}{'python/java':>13}")
        for title, kind, info, decode in cases:
            ours = info.encode()
            if isinstance(info, SubscriptionInfo):
                kafka = bytes.fromhex(java.ok("sub_encode", **subscription_request(info))["hex"])
            else:
                kafka = bytes.fromhex(java.ok("asg_encode", **assignment_request(info))["hex"])
            if ours != kafka:
                raise SystemExit(f"{title}: our bytes differ from Kafka's; run the compatibility tests")
            py_ns = python_median_ns(ours, decode, args.rounds, warmup=3)
            answer = java.ok("bench", kind=kind, hex=kafka.hex(), warmup=args.warmup, iterations=args.rounds)
            java_ns = statistics.median(answer["nanos"])
            print(f"{title:<40}{len(ours):>9}{py_ns / 1e6:>12.2f}{java_ns / 1e6:>15.2f}{py_ns / java_ns:>12.1f}x")
    finally:
        java.close()


if __name__ == "__main__":
    main()
