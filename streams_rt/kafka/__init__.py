"""Broker-facing helpers: the development broker launcher, admin and partitioner helpers."""
