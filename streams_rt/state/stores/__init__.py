"""State stores, bytes in and out: key-value and window stores behind one interface each, kept in
RocksDB (one database per store per task) or in memory."""

from streams_rt.state.stores.base import StateStore
from streams_rt.state.stores.kv import KeyValueStore, RocksDBKeyValueStore
from streams_rt.state.stores.memory import InMemoryKeyValueStore, InMemoryWindowStore
from streams_rt.state.stores.rocksdb import RocksDBStore
from streams_rt.state.stores.rocksdb_options import RocksDBConfigSetter, RocksDBSettings
from streams_rt.state.stores.typed import Serde, TypedKeyValueStore, TypedWindowStore
from streams_rt.state.stores.window import RocksDBWindowStore, WindowStore

__all__ = [
    "InMemoryKeyValueStore",
    "InMemoryWindowStore",
    "KeyValueStore",
    "RocksDBConfigSetter",
    "RocksDBKeyValueStore",
    "RocksDBSettings",
    "RocksDBStore",
    "RocksDBWindowStore",
    "Serde",
    "StateStore",
    "TypedKeyValueStore",
    "TypedWindowStore",
    "WindowStore",
]
