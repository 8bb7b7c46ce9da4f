"""Turning task numbers back into each client's frozensets of TaskId.

Built as the client's own input set minus what it loses plus what it gains, because copying a
frozenset reuses its stored hashes while hashing a TaskId runs Python code: a sticky round, where
little changes, then costs little."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from streams_rt.protocol import TaskId


def rebuild(
    previous: Collection[TaskId], previous_numbers: Collection[int], now: Iterable[int], tasks: Sequence[TaskId]
) -> frozenset[TaskId]:
    """`previous` is what the client reported, `previous_numbers` the part of it that was recognised
    (valid, existing tasks); `now` is the new set, as task numbers."""
    now_set = now if isinstance(now, (set, frozenset)) else set(now)
    if not now_set:
        return frozenset()
    if len(previous) != len(previous_numbers):  # it reported tasks we do not recognise: start afresh
        return frozenset([tasks[t] for t in now_set])
    before = previous_numbers if isinstance(previous_numbers, (set, frozenset)) else set(previous_numbers)
    lost = before - now_set
    gained = now_set - before
    if len(lost) + len(gained) >= len(now_set):  # more change than content: hashing anew is cheaper
        return frozenset([tasks[t] for t in now_set])
    result = frozenset(previous)
    if lost:
        result = result.difference([tasks[t] for t in lost])
    if gained:
        result = result.union([tasks[t] for t in gained])
    return result
