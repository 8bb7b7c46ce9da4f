"""The coordinator/host contract: the RPC message schemas, the group errors on the wire, and the
typed client. Both sides import it; `coordinator` and `tasks` never import each other (as Kafka's
shared `common/protocol/Errors.java` and `common/message/*.json` sit between broker and clients)."""

from streams_rt.rpc.client import CoordinatorUnavailable, GroupClient
from streams_rt.rpc.errors import GroupError, GroupErrorException

__all__ = ["CoordinatorUnavailable", "GroupClient", "GroupError", "GroupErrorException"]
