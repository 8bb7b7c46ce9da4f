"""An audit of who owned which active task at which generation, and who processed which batch.

Every task host of an application may append to one shared file (`task.ownership.log`): one JSON
line per assignment it receives (its whole active set at that generation), per task it gives up
(revoked or lost), and per batch it commits. Lines are appended with one `write` on an O_APPEND
descriptor, so lines from several processes never interleave, and the file's order is the order
in which the events happened. The fault suite and the upgrade test read it back with `check` to
prove that no task ever had two active owners.

Kafka Streams' system tests grep the instances' logs for the same facts; a file of records made
for the purpose is harder to misread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from streams_rt.protocol import TaskId
from streams_rt.tasks.task import Ranges

log = logging.getLogger(__name__)
ASSIGNED, REVOKED, LOST, BATCH = "assigned", "revoked", "lost", "batch"


class OwnershipLog:
    """The writer, shared by a host's threads. A host that cannot write its audit says so once and
    goes on: the audit must never stop processing."""

    def __init__(self, path: Path, host: str) -> None:
        self.path, self.host = path, host
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._failed = False

    def assigned(self, generation: int, active: Iterable[TaskId]) -> None:
        self._append({"event": ASSIGNED, "generation": generation, "active": sorted(str(t) for t in active)})

    def released(self, generation: int, tasks: Iterable[TaskId], clean: bool) -> None:
        self._append({"event": REVOKED if clean else LOST, "generation": generation,
                      "tasks": sorted(str(t) for t in tasks)})

    def batch(self, generation: int, task: TaskId, ranges: Ranges, replay: bool) -> None:
        self._append({"event": BATCH, "generation": generation, "task": str(task), "replay": replay,
                      "ranges": [[tp.topic, tp.partition, start, end] for tp, (start, end) in sorted(ranges.items())]})

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _append(self, line: dict[str, object]) -> None:
        data = (json.dumps({"host": self.host, "pid": os.getpid(), **line}, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._fd < 0:
                return
            try:
                os.write(self._fd, data)
            except OSError as e:
                if not self._failed:
                    log.warning("cannot append to the task ownership log %s (%s); going on without it", self.path, e)
                    self._failed = True


@dataclass(frozen=True)
class Violation:
    line: int
    reason: str


def read(path: Path) -> list[dict[str, object]]:
    """The log's events in file order; a torn last line (a host killed mid-write) is left out."""
    events = []
    for text in path.read_text().splitlines():
        try:
            events.append(json.loads(text))
        except json.JSONDecodeError:
            continue
    return events


def check(events: Iterable[Mapping[str, object]]) -> list[Violation]:
    """Every way the log shows a task with two owners:
    - two hosts given the same active task at one generation;
    - two hosts committing batches of one task at one generation;
    - a batch committed at a generation older than one already seen for that task (a fenced
      zombie that went on writing)."""
    violations: list[Violation] = []
    assigned_to: dict[tuple[str, int], str] = {}
    batches_by: dict[tuple[str, int], str] = {}
    newest_batch: dict[str, int] = {}
    for number, event in enumerate(events, start=1):
        host, generation = str(event["host"]), _int(event["generation"])
        if event["event"] == ASSIGNED:
            for task in _strings(event["active"]):
                owner = assigned_to.setdefault((task, generation), host)
                if owner != host:
                    violations.append(Violation(number, f"task {task} is active on {owner} and {host} "
                                                        f"at generation {generation}"))
        elif event["event"] == BATCH:
            task = str(event["task"])
            owner = batches_by.setdefault((task, generation), host)
            if owner != host:
                violations.append(Violation(number, f"task {task}: batches from {owner} and {host} "
                                                    f"at generation {generation}"))
            newest = newest_batch.get(task, generation)
            if generation < newest:
                violations.append(Violation(number, f"task {task}: {host} committed a batch at generation "
                                                    f"{generation} after one at generation {newest}"))
            newest_batch[task] = max(newest, generation)
    return violations


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise ValueError(f"not an integer: {value!r}")
    return value


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        raise ValueError(f"not a list: {value!r}")
    return [str(v) for v in value]
