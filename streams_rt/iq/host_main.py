"""The task host process with its interactive-query server: `python -m streams_rt.iq.host_main
--config host.json` (the configuration file of `streams_rt.tasks.host_main`). The entry point lives
here because `tasks` may not import `iq`: this module hands the server's factory to the host."""

from __future__ import annotations

import sys

from streams_rt.iq.server import query_server
from streams_rt.tasks.host_main import main as host_main


def main(argv: list[str] | None = None) -> int:
    return host_main(argv, query_server=query_server)


if __name__ == "__main__":
    sys.exit(main())
