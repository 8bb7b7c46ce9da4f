"""Child processes for the state tests (real OS processes, so kill -9 and flock behave as in
production). Run as `python -m tests.state.child <command> <json args>`; progress lines on stdout."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from streams_rt.protocol import TaskId
from streams_rt.state import (
    ChangelogWriter,
    StateConfig,
    StateDirectory,
    StateError,
    StoreCorrupted,
    StoreSpec,
    WindowSpec,
)
from tests.state.conftest import StateHost

KV = StoreSpec("kv")
WINDOWS = StoreSpec("win", WindowSpec(retention_ms=3_600_000, window_size_ms=60_000))
SPECS = [KV, WINDOWS]
NOBODY = 65534  # the uid and gid a root child drops to, so permissions apply to it


def say(line: str) -> None:
    print(line, flush=True)


def key(i: int) -> bytes:
    return b"key-%05d" % i


def batch_writes(commit: int, per_commit: int) -> list[tuple[bytes, bytes | None]]:
    """The writes of one commit: puts over a rolling key space, and a delete of every 7th key."""
    writes: list[tuple[bytes, bytes | None]] = []
    for i in range(per_commit):
        k = key((commit * per_commit + i) % (per_commit * 3))
        writes.append((k, b"c%d-i%d" % (commit, i)))
        if i % 7 == 0:
            writes.append((key((commit * 31 + i) % (per_commit * 3)), None))
    return writes


def expected_kv(commits: int, per_commit: int) -> dict[bytes, bytes]:
    state: dict[bytes, bytes] = {}
    for commit in range(commits):
        for k, v in batch_writes(commit, per_commit):
            if v is None:
                state.pop(k, None)
            else:
                state[k] = v
    return state


def expected_windows(commits: int) -> dict[int, bytes]:
    return {commit * 60_000: b"w%d" % commit for commit in range(commits)}


def _config(args: dict[str, Any]) -> StateConfig:
    return StateConfig(
        application_id=args["app_id"],
        bootstrap_servers=args["bootstrap"],
        state_dir=Path(args["state_dir"]),
        processing_guarantee=args.get("guarantee", "exactly_once_v2"),
    )


def hold_task(args: dict[str, Any]) -> None:
    """Lock a task directory (optionally without the application lock) and wait to be killed."""
    directory = StateDirectory(args["state_dir"], args["app_id"], lock_application=args["app_lock"])
    lock = directory.lock_task(TaskId.parse(args["task"]))
    say(f"LOCKED {lock.directory}")
    time.sleep(600)


def writer(args: dict[str, Any]) -> None:
    """Commit `commits` batches, then keep writing without committing until killed."""
    config = _config(args)
    per_commit = args["per_commit"]
    writers: list[ChangelogWriter] = []

    def keep_writer(transactional_id: str | None) -> ChangelogWriter:
        writers.append(ChangelogWriter(config.bootstrap_servers, transactional_id))
        return writers[-1]

    with StateHost(config) as host:
        state = host.active(TaskId.parse(args["task"]), SPECS, keep_writer)
        kv, windows = state.kv_store("kv"), state.window_store("win")
        for commit in range(args["commits"]):
            for k, v in batch_writes(commit, per_commit):
                kv.put(k, v)
            windows.put(b"w", b"w%d" % commit, commit * 60_000)
            state.commit()
            say(f"COMMITTED {commit + 1}")
        commit = args["commits"]
        sent = 0
        while True:  # uncommitted writes, on their way to the changelog when the kill comes
            for k, _ in batch_writes(commit, per_commit):
                kv.put(k, b"uncommitted")
                sent += 1
            windows.put(b"w", b"uncommitted", commit * 60_000)
            writers[-1].flush()  # make sure they reach the broker, inside the open transaction
            if sent >= per_commit:
                say(f"MIDWRITE {sent}")
            commit += 1


def active_until_stopped(args: dict[str, Any]) -> None:
    """An active host: commit batches until the stop file appears, then close cleanly."""
    config = _config(args)
    per_commit = args["per_commit"]
    stop = Path(args["stop_file"])
    with StateHost(config) as host:
        state = host.active(TaskId.parse(args["task"]), SPECS)
        kv = state.kv_store("kv")
        commit = 0
        while not stop.exists():
            for k, v in batch_writes(commit, per_commit):
                kv.put(k, v)
            state.window_store("win").put(b"w", b"w%d" % commit, commit * 60_000)
            state.commit()
            commit += 1
            say(f"COMMITTED {commit}")
            time.sleep(args.get("pause_s", 0.05))
        state.close(clean=True)
        say(f"DONE {commit}")


def standby_until_killed(args: dict[str, Any]) -> None:
    """A standby: catch up with the changelogs, checkpoint (no close, no flush after it), report
    the checkpointed offsets, and wait to be killed."""
    config = _config(args)
    with StateHost(config) as host:
        state = host.standby(TaskId.parse(args["task"]), SPECS)
        while host.reader.poll(0.2) or state.lag():
            pass
        state.checkpoint()
        say(f"CHECKPOINTED {json.dumps({f'{tp.topic} {tp.partition}': o for tp, o in state.offsets.items()})}")
        time.sleep(600)


class _Collecting(logging.Handler):
    """Keeps the message of every warning it is handed."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def reopen(args: dict[str, Any]) -> None:
    """Open the task as active after damage to its files, as a host does: a StoreCorrupted (from
    the open, the restore or a read) closes the task dirty and opens it again, at most twice. Prints
    one line, `RESULT <json>`: what the stores hold against what was committed, or the typed error
    that stopped it, and the state layer's warnings."""
    if args.get("as_nobody") and os.getuid() == 0:
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    warnings: list[str] = []
    logging.getLogger("streams_rt.state").addHandler(_Collecting(warnings))
    config = _config(args)
    task = TaskId.parse(args["task"])
    corrupted: list[str] = []
    try:
        with StateHost(config) as host:
            for _ in range(3):
                state = host.task(task, SPECS)
                try:
                    state.open_active()
                    host.reader.finish_restores()
                    kv = dict(state.kv_store("kv").all())
                    windows = dict(state.window_store("win").fetch(b"w", 0, 2**63 - 1))
                    restored = {name: host.listener.restored(name) for name in ("kv", "win")}
                    state.close()
                    break
                except StoreCorrupted as exc:
                    corrupted.append(str(exc.path))
                    state.close(clean=False)
            else:
                raise AssertionError(f"still damaged after three opens: {corrupted}")
    except StateError as exc:
        say("RESULT " + json.dumps({"error": type(exc).__name__, "path": str(getattr(exc, "path", "")),
                                    "message": str(exc), "warnings": warnings}))
        return
    expected = expected_kv(args["commits"], args["per_commit"])
    say("RESULT " + json.dumps({
        "kv_keys": len(kv), "kv_equal": kv == expected, "windows_equal": windows == expected_windows(args["commits"]),
        "restored": restored, "corrupted": corrupted, "warnings": warnings,
    }))


COMMANDS = {"hold-task": hold_task, "writer": writer, "active": active_until_stopped, "standby": standby_until_killed,
            "reopen": reopen}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](json.loads(sys.argv[2]))
