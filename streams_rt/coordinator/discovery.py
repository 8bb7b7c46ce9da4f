"""How operator tools on the driver's machine find a running coordinator and authenticate to it:
the coordinator writes `<state.dir>/<application.id>.coordinator.json` (owner-only, mode 0600: it
holds the run's secret) when it starts and removes it when it closes. `streams-rt status` reads it
by application id; from elsewhere, give the address and the secret instead."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from streams_rt.processes import start_time, still_running

SUFFIX = ".coordinator.json"


class DiscoveryError(ValueError):
    """No usable coordinator file: one line saying which file and why."""


def this_process() -> tuple[int, str | None]:
    """The pid and start time a coordinator file names this process by."""
    return os.getpid(), start_time(os.getpid())


@dataclass(frozen=True)
class CoordinatorFile:
    application_id: str
    address: str  # the Flight endpoint (grpc:// or grpc+tls://)
    http: str | None  # the HTTP endpoint (status page, /metrics), or None when it is off
    pid: int  # the driver's process
    started: str | None  # its start time (streams_rt.processes): names it across pid reuse
    secret: str | None  # the run's secret (rpc.authenticate), or None
    truststore: str | None  # rpc.ssl.truststore.location, for a TLS coordinator

    def write(self, state_dir: Path) -> Path:
        """Atomically, readable by its owner only (the file carries the secret)."""
        state_dir.mkdir(parents=True, exist_ok=True)
        path = coordinator_file(state_dir, self.application_id)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(asdict(self), out)
        os.replace(tmp, path)
        return path

    def remove(self, state_dir: Path) -> None:
        """Delete the file if it is still this coordinator's (a newer driver may have replaced it)."""
        path = coordinator_file(state_dir, self.application_id)
        with contextlib.suppress(DiscoveryError, FileNotFoundError):
            if read_coordinator_file(state_dir, self.application_id) == self:
                path.unlink()


def coordinator_file(state_dir: Path, application_id: str) -> Path:
    return state_dir / f"{application_id}{SUFFIX}"


def read_coordinator_file(state_dir: Path, application_id: str) -> CoordinatorFile:
    """The coordinator of `application_id` that runs on this machine. DiscoveryError when there is
    no file, it cannot be read, or its driver has exited (a stale file, left by a crash)."""
    path = coordinator_file(state_dir, application_id)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DiscoveryError(
            f"no coordinator of application {application_id!r} runs on this machine ({path} does not exist); "
            "give --coordinator and the secret instead, or --state-dir if the application sets state.dir"
        ) from None
    except (OSError, ValueError) as e:
        raise DiscoveryError(f"{path} cannot be read: {e}") from None
    try:
        found = CoordinatorFile(**raw)
    except TypeError:
        raise DiscoveryError(f"{path} is not a coordinator file (unexpected fields)") from None
    if not isinstance(found.pid, int) or not isinstance(found.address, str):
        raise DiscoveryError(f"{path} is not a coordinator file (pid and address are missing)")
    if not still_running(found.pid, found.started):
        raise DiscoveryError(f"the coordinator of {application_id!r} has exited (pid {found.pid}); {path} is stale "
                             "and can be deleted")
    return found
