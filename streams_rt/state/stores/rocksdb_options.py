"""RocksDB options: our defaults, the user's `rocksdb.config.setter` hook, and the restore variant.

Memory is bounded by configuration, never by data size nor by the number of stores: every store of
a host (one `RocksDBSettings`) shares one block cache of `rocksdb.block.cache.bytes`, and one write
buffer manager that holds all their memtables to `rocksdb.max.write.buffers` x
`rocksdb.write.buffer.bytes`, charged to that cache (Kafka Streams' BoundedMemoryRocksDBConfig, done
for every application). Index and filter blocks live in the cache too, so they count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import rocksdict

from streams_rt.config.registry import ROCKSDB_BLOCK_CACHE_BYTES, ROCKSDB_MAX_WRITE_BUFFERS, ROCKSDB_WRITE_BUFFER_BYTES

BLOCK_SIZE_BYTES = 4 << 10
# RocksDB's default: at this many L0 files writes slow down (and stop at 36). A restore must not
# leave more behind, or the task's first commits stall while compaction catches up.
LEVEL0_SLOWDOWN_WRITES_TRIGGER = 20
# Restore: small vector memtables, each sorted at flush while it still fits in the CPU cache (the
# sort is about half of a restore's flush cost; 32 MB memtables sorted 1.7x slower per record), merged
# 6 to an L0 file (~7 MB), at most 16 (32 MB) in memory, and two flush threads (RocksDB runs one
# flush per 4 background jobs) so one sorts while the other writes its file.
RESTORE_WRITE_BUFFER_BYTES = 2 << 20
RESTORE_WRITE_BUFFERS_PER_FLUSH = 6
RESTORE_MAX_WRITE_BUFFERS = 16
RESTORE_BACKGROUND_JOBS = 8
# A restore leaves its L0 files to compact after the store reopens, in one L0-to-base compaction
# that RocksDB runs on one thread unless it may split it by key range: with 2 subcompactions that
# tail took 1.7 s instead of 3.2 s after restoring 5M records on 2 cores (bench/peers/restore.py).
SUBCOMPACTIONS = min(4, os.cpu_count() or 1)


@runtime_checkable
class RocksDBConfigSetter(Protocol):
    """Kafka's `rocksdb.config.setter`: adjust a store's options (block cache, write buffer,
    compression, ...) before it is opened. Called once per store open, for every store, with the
    application's properties as given (Kafka's `configs`)."""

    def set_config(self, store_name: str, options: rocksdict.Options, configs: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class RocksDBSettings:
    """What every store of a host opens with: the memory bounds (one cache and one write buffer
    manager, made here and shared by every store opened with these settings), and the user's
    setter with the properties it is handed."""

    block_cache_bytes: int = ROCKSDB_BLOCK_CACHE_BYTES.default_value()
    write_buffer_bytes: int = ROCKSDB_WRITE_BUFFER_BYTES.default_value()
    max_write_buffers: int = ROCKSDB_MAX_WRITE_BUFFERS.default_value()
    config_setter: RocksDBConfigSetter | None = None
    configs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    cache: rocksdict.Cache = field(init=False, repr=False, compare=False)
    write_buffers: rocksdict.WriteBufferManager = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cache = rocksdict.Cache(self.block_cache_bytes + self.memtable_bytes)
        object.__setattr__(self, "cache", cache)
        object.__setattr__(self, "write_buffers", rocksdict.WriteBufferManager.new_write_buffer_manager_with_cache(
            self.memtable_bytes, False, cache))

    @property
    def memtable_bytes(self) -> int:
        return self.max_write_buffers * self.write_buffer_bytes


DEFAULT_SETTINGS = RocksDBSettings()


def store_options(store_name: str, settings: RocksDBSettings = DEFAULT_SETTINGS) -> rocksdict.Options:
    """Options for normal processing: raw bytes, LZ4, a bounded block cache and write buffers."""
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_compression_type(rocksdict.DBCompressionType.lz4())
    options.set_write_buffer_size(settings.write_buffer_bytes)
    options.set_max_write_buffer_number(settings.max_write_buffers)
    options.set_level_compaction_dynamic_level_bytes(True)
    options.set_level_zero_slowdown_writes_trigger(LEVEL0_SLOWDOWN_WRITES_TRIGGER)
    options.set_max_subcompactions(SUBCOMPACTIONS)
    options.set_keep_log_file_num(2)
    # Damage is refused, never worked around: paranoid checks (file sizes against the MANIFEST at
    # open, stopping on a background error), and a write-ahead log that must replay whole. A log
    # that is damaged or cut short fails the open (the store is then wiped and restored from its
    # changelog) rather than dropping its tail.
    options.set_paranoid_checks(True)
    options.set_wal_recovery_mode(rocksdict.DBRecoveryMode.absolute_consistency())
    # Flushes of several column families reach the MANIFEST as one edit, so the offsets family
    # can never be on disk ahead of the data it describes, whatever is lost later.
    options.set_atomic_flush(True)
    options.set_write_buffer_manager(settings.write_buffers)
    table = rocksdict.BlockBasedOptions()
    table.set_block_cache(settings.cache)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    table.set_block_size(BLOCK_SIZE_BYTES)
    table.set_bloom_filter(10, False)
    options.set_block_based_table_factory(table)
    if settings.config_setter is not None:
        settings.config_setter.set_config(store_name, options, settings.configs)
    return options


def restore_options(store_name: str, settings: RocksDBSettings = DEFAULT_SETTINGS) -> rocksdict.Options:
    """Options for bulk restore: the same, plus unsorted vector memtables (sorted once at flush: a
    skip list's sorted inserts cost the restoring thread, which holds the GIL, about 1.3 us a record).
    Restore only writes, so lookups never pay for it."""
    options = store_options(store_name, settings)
    options.set_memtable_factory(rocksdict.MemtableFactory.vector())
    options.set_allow_concurrent_memtable_write(False)
    options.set_write_buffer_size(RESTORE_WRITE_BUFFER_BYTES)
    options.set_min_write_buffer_number_to_merge(RESTORE_WRITE_BUFFERS_PER_FLUSH)
    options.set_max_write_buffer_number(RESTORE_MAX_WRITE_BUFFERS)
    options.set_max_background_jobs(RESTORE_BACKGROUND_JOBS)
    options.set_disable_auto_compactions(True)
    options.set_atomic_flush(False)  # `sync` flushes the data first and the offsets last instead: cheaper
    options.set_level_zero_slowdown_writes_trigger(1 << 20)
    options.set_level_zero_stop_writes_trigger(1 << 20)
    return options
