"""The coordinator/host contract: the RPC message schemas, the group errors on the wire, the typed
client, and the security every streams_rt Flight endpoint shares (the application's secret, TLS,
loopback by default). Both sides import it; `coordinator` and `tasks` never import each other (as
Kafka's shared `common/protocol/Errors.java` and `common/message/*.json` sit between broker and clients)."""

from streams_rt.rpc.auth import SharedSecret
from streams_rt.rpc.client import AuthenticationRefused, CoordinatorUnavailable, GroupClient
from streams_rt.rpc.errors import GroupError, GroupErrorException
from streams_rt.rpc.settings import ControlPlaneSettings
from streams_rt.rpc.transport import InsecureBindError, SecureFlightServer, TlsIdentity

__all__ = [
    "AuthenticationRefused",
    "ControlPlaneSettings",
    "CoordinatorUnavailable",
    "GroupClient",
    "GroupError",
    "GroupErrorException",
    "InsecureBindError",
    "SecureFlightServer",
    "SharedSecret",
    "TlsIdentity",
]
