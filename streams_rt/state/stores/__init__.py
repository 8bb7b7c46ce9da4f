"""RocksDB-backed state stores (one RocksDB per store per task), bytes in and out."""

from streams_rt.state.stores.base import RocksDBStore
from streams_rt.state.stores.kv import KeyValueStore
from streams_rt.state.stores.rocksdb_options import RocksDBConfigSetter
from streams_rt.state.stores.typed import Serde, TypedKeyValueStore, TypedWindowStore
from streams_rt.state.stores.window import WindowStore

__all__ = [
    "KeyValueStore",
    "RocksDBConfigSetter",
    "RocksDBStore",
    "Serde",
    "TypedKeyValueStore",
    "TypedWindowStore",
    "WindowStore",
]
