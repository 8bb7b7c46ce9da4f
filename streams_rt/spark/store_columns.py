"""The columns of `StreamsRuntime.read_store`, pure: Spark types for a store's key and value serdes,
and the values of the query endpoint's JSON answers (serde-decoded, see iq/codec.py) as those types.

    string -> STRING    int32 -> INT    int64 -> BIGINT    bytes -> BINARY (the stored bytes)
    json and any other serde -> STRING holding the decoded value as JSON text (`from_json` reads it)

A typed column's value that its serde cannot read (the endpoint's `{"undecodable": ...}`) fails the
read, naming the key and task: the column has no place for it, and a row is never dropped silently.
A JSON text column holds that marker as the endpoint gave it."""

from __future__ import annotations

import json
from typing import Any

from streams_rt.iq.codec import KeyRejected, decode_base64url

SPARK_TYPES = {"string": "STRING", "int32": "INT", "int64": "BIGINT", "bytes": "BINARY"}
JSON_TEXT = "STRING"


class UndecodableValue(ValueError):
    """A stored key or value that its serde could not read."""


def spark_type(serde_name: str) -> str:
    return SPARK_TYPES.get(serde_name, JSON_TEXT)


def store_schema(key_serde: str, value_serde: str) -> str:
    """The DataFrame's schema (DDL): key, value, the task that holds the entry, the batch its state
    was committed at (null before the first numbered batch)."""
    return f"key {spark_type(key_serde)}, value {spark_type(value_serde)}, task STRING, batch BIGINT"


def column_value(serde_name: str, answered: Any) -> Any:
    """One key or value of an answer as its column holds it; UndecodableValue if the serde could not read it."""
    if serde_name in SPARK_TYPES:
        if isinstance(answered, dict):  # the endpoint's {"undecodable": base64url}
            raise UndecodableValue(f"the {serde_name} serde could not read the stored bytes {answered}")
        if serde_name == "bytes":
            try:
                return decode_base64url(str(answered), "value")
            except KeyRejected as e:
                raise UndecodableValue(str(e)) from None
        return answered
    return json.dumps(answered, separators=(",", ":"))
