"""Keys and values between a URL and a store: a key in a path or query string becomes the bytes the
store's key serde writes, and stored bytes become JSON through the store's serdes.

Text per key serde: `string` as is; `int32` and `int64` a decimal integer; `json` a JSON document;
`bytes` base64url (padding optional). Any other serde gets the text itself. Bytes that a serde
hands back (the `bytes` serde, a custom one) travel as base64url strings."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from streams_rt.topology.serdes import Serde, SerdeError


class KeyRejected(ValueError):
    """The key's text is not one the store's key serde can write; says which serde and why."""


def key_bytes(serde: Serde[Any], text: str) -> bytes:
    """The bytes the store keeps for the key written as `text` (KeyRejected if it cannot be one)."""
    value = _parse(serde, text)
    try:
        data = serde.serialize(value)
    except (SerdeError, ValueError, TypeError, OverflowError) as e:
        raise KeyRejected(f"the {serde!r} key serde rejects {text!r:.80}: {e}") from None
    if data is None:
        raise KeyRejected(f"the {serde!r} key serde wrote nothing for {text!r:.80}")
    return data


def _parse(serde: Serde[Any], text: str) -> Any:
    kind = serde.name
    if kind in ("int32", "int64"):
        try:
            return int(text, 10)
        except ValueError:
            raise KeyRejected(f"the {serde!r} key serde needs a decimal integer, got {text!r:.80}") from None
    if kind == "json":
        try:
            return json.loads(text)
        except ValueError as e:
            raise KeyRejected(f"the {serde!r} key serde needs a JSON document, got {text!r:.80}: {e}") from None
    if kind == "bytes":
        return decode_base64url(text, "key")
    return text


def decode_base64url(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise KeyRejected(f"the {what} must be base64url, got {text!r:.80}") from None


def encode_base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def to_json(serde: Serde[Any], data: bytes) -> Any:
    """Stored bytes as a JSON value through `serde` (bytes as base64url); bytes the serde cannot read
    are given as base64url too, under a marker, rather than failing the whole answer."""
    try:
        value = serde.deserialize(data)
    except (SerdeError, ValueError, TypeError):
        return {"undecodable": encode_base64url(data)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return encode_base64url(bytes(value))
    return value
