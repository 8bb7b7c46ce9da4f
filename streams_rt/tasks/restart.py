"""A bounce of one task host with new settings or new code, asked for over its batch endpoint
(the `restart` action): the rolling upgrade's unit of work.

The host checks the request before it agrees (the merged properties must resolve against the
configuration registry, the interpreter must exist), answers, then closes cleanly (commit,
checkpoint, leave) and replaces itself with `exec`: the same pid and start time, so whoever
watches it (an executor's `ensure_host`, the local runtime) sees the same host come back, now
started from the new host file, and possibly from another Python environment with another
version of streams_rt."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams_rt.config import ConfigError, ConfigErrors, resolve
from streams_rt.config.registry import (
    APPLICATION_SERVER,
    GROUP_INSTANCE_ID,
    HOST_RESTART_ALLOWED_ENV,
    HOST_RESTART_ALLOWED_INTERPRETERS,
    IQ_PORT,
)
from streams_rt.protocol import LATEST_SUPPORTED_VERSION
from streams_rt.tasks.release_stand_in import PROTOCOL_KEY, VERSION_KEY

RESUME_VERSION_KEY = "resume_version"  # the host file's: see MemberConfig.resume_version


class RestartRefused(ValueError):
    """The request would not make a host that starts: one line saying why; the host keeps running."""


@dataclass(frozen=True)
class RestartRequest:
    """`properties`: keys to set (a None value removes the key, e.g. `upgrade.from` on the second
    bounce); `python`: the interpreter to start from (another environment); `env`: variables to
    set for it; `latest_supported_version`: the metadata version the new host speaks at most
    (None: this release's latest), which lets a test stand a host in for an older release."""

    properties: Mapping[str, Any] = field(default_factory=dict)
    python: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    latest_supported_version: int | None = None

    @classmethod
    def from_json(cls, body: bytes) -> RestartRequest:
        try:
            data = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            raise RestartRefused(f"the restart request is not JSON: {e}") from None
        if not isinstance(data, dict) or set(data) - {"properties", "python", "env", "latest_supported_version"}:
            raise RestartRefused("a restart request is an object with properties, python, env and "
                                 "latest_supported_version only")
        properties, env = data.get("properties") or {}, data.get("env") or {}
        if not isinstance(properties, dict) or not all(isinstance(k, str) for k in properties):
            raise RestartRefused("properties must be an object of configuration keys")
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise RestartRefused("env must be an object of strings")
        python, version = data.get("python"), data.get("latest_supported_version")
        if python is not None and not isinstance(python, str):
            raise RestartRefused("python must be a path")
        if version is not None and (not isinstance(version, int) or not 1 <= version <= LATEST_SUPPORTED_VERSION):
            raise RestartRefused(f"latest_supported_version must be in [1, {LATEST_SUPPORTED_VERSION}]")
        return cls(properties, python, env, version)

    def to_json(self) -> bytes:
        return json.dumps({"properties": dict(self.properties), "python": self.python, "env": dict(self.env),
                           "latest_supported_version": self.latest_supported_version}).encode()

    def host_config(self, current: Mapping[str, Any], running: str = sys.executable) -> dict[str, Any]:
        """The new host file: the current one with these properties and version; raises
        RestartRefused when the merged properties do not resolve, would change the host's
        group.instance.id (its identity comes from the application's, with its own name appended:
        one set here could fence another host's) or what a restart may do, or when the interpreter
        or an environment variable is not one the application allows (the holder of the run's
        secret must not be able to start the host from any program with any environment). `running`
        is the interpreter the host runs now (always allowed)."""
        self._check_fixed_keys()
        try:
            allowed = resolve(current["properties"])
        except (ConfigError, ConfigErrors) as e:
            raise RestartRefused(f"this host's own properties do not resolve: {e}") from None
        self._check_allowed(allowed.get(HOST_RESTART_ALLOWED_INTERPRETERS), allowed.get(HOST_RESTART_ALLOWED_ENV),
                            running)
        properties = dict(current["properties"])
        for key, value in self.properties.items():
            if value is None:
                properties.pop(key, None)
            else:
                properties[key] = value
        try:
            resolve(properties)
        except (ConfigError, ConfigErrors) as e:
            raise RestartRefused(f"the new properties do not resolve: {e}") from None
        config = {**current, "properties": properties}
        config.pop(VERSION_KEY, None)
        config.pop(PROTOCOL_KEY, None)  # a release stand-in's: the new host is this release unless asked
        if self.latest_supported_version is not None:
            config[VERSION_KEY] = self.latest_supported_version
        return config

    def _check_fixed_keys(self) -> None:
        """Keys only the application's deployment sets: the host's identity and what a restart may do."""
        for fixed in (GROUP_INSTANCE_ID, HOST_RESTART_ALLOWED_INTERPRETERS, HOST_RESTART_ALLOWED_ENV):
            if fixed.name in self.properties:
                raise RestartRefused(f"a restart cannot change {fixed.name}: set it in the application's properties, "
                                     "it takes effect at the driver's restart")

    def _check_allowed(self, interpreters: tuple[str, ...], env_keys: tuple[str, ...], running: str) -> None:
        refused_env = sorted(set(self.env) - set(env_keys))
        if refused_env:
            raise RestartRefused(f"environment variables {', '.join(refused_env)} are not in "
                                 f"{HOST_RESTART_ALLOWED_ENV.name} ({', '.join(env_keys) or 'empty'})")
        if self.python is None:
            return
        if not (Path(self.python).is_file() and os.access(self.python, os.X_OK)):
            raise RestartRefused(f"{self.python} is not an executable file")
        # Compared as given (a venv's bin/python is a symlink to the base interpreter: resolving it
        # would let any venv on the same Python through) and with the running one as it was started.
        if self.python not in (*interpreters, running):
            raise RestartRefused(f"{self.python} is not in {HOST_RESTART_ALLOWED_INTERPRETERS.name} "
                                 f"({', '.join(interpreters) or 'empty: only the running interpreter'})")


def carry_over(new_config: Mapping[str, Any], used_version: int, query_endpoint: str | None) -> dict[str, Any]:
    """The new host file with what lets the restarted host come back as it was, so that as a static
    member (group.instance.id) it keeps its tasks without a round: the metadata version the group
    spoke with it (`resume_version`), and the query port it was reached at (the endpoint every
    member's assignment names), unless the request or the application fixes the port."""
    config = {**new_config, RESUME_VERSION_KEY: used_version}
    properties = dict(config["properties"])
    if query_endpoint is not None and not ({IQ_PORT.name, APPLICATION_SERVER.name} & properties.keys()):
        properties[IQ_PORT.name] = int(query_endpoint.rpartition(":")[2])
    return {**config, "properties": properties}
