"""Interactive queries: an HTTP endpoint in every task host over its live stores, with key routing,
freshness on every answer, standby reads and a consistent-batch mode; a Python client. See docs/iq.md."""

from streams_rt.iq.client import Answer, Client, QueryError

__all__ = ["Answer", "Client", "QueryError"]
