"""streams_rt's log levels, from the environment, in the driver and in every task host:
`STREAMS_RT_LOG_LEVEL=INFO` sets every streams_rt logger; `WARNING,streams_rt.coordinator=DEBUG`
sets a default and per-logger levels. An application that configures Python's logging itself keeps
its handlers; when nothing handles streams_rt's records, one stderr handler writes them one line
each."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

LOG_LEVEL_ENV = "STREAMS_RT_LOG_LEVEL"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
ROOT = "streams_rt"
FORMAT = "%(asctime)s driver[%(process)d] %(levelname)s %(name)s: %(message)s"


def parse_levels(text: str) -> dict[str, int]:
    """`LEVEL[,logger=LEVEL...]` -> {logger name: level}; the bare level is streams_rt's. ValueError
    (one line, naming the variable) for an unknown level or a malformed entry."""
    levels: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, equals, level = entry.rpartition("=")
        name = name.strip() if equals else ROOT
        level = level.strip().upper()
        if level not in LEVELS:
            raise ValueError(f"{LOG_LEVEL_ENV}: unknown level {level!r} in {entry!r} (one of {', '.join(LEVELS)})")
        if not (name == ROOT or name.startswith(ROOT + ".")):
            raise ValueError(f"{LOG_LEVEL_ENV}: {name!r} is not a streams_rt logger (streams_rt or streams_rt.<part>)")
        levels[name] = logging.getLevelName(level)
    return levels


def apply_log_levels(environ: Mapping[str, str] = os.environ) -> None:
    """Set the levels `STREAMS_RT_LOG_LEVEL` names (nothing when it is unset); make sure its records
    are written somewhere."""
    text = environ.get(LOG_LEVEL_ENV)
    if text is None:
        return
    for name, level in parse_levels(text).items():
        logging.getLogger(name).setLevel(level)
    root = logging.getLogger(ROOT)
    if not root.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
