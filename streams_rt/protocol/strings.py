"""Java's string encodings used on the wire: modified UTF-8 (DataOutputStream.writeUTF) and
UTF-16 code units (writeChars), plus String.hashCode, which decides Kafka's hash-map orders."""

from __future__ import annotations

import re

_NON_BMP = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_UTF_BYTES = 65535  # writeUTF's two-byte length prefix


def _split_non_bmp(char: re.Match[str]) -> str:
    """One supplementary character as its two UTF-16 surrogates, which modified UTF-8 encodes apart."""
    units = char.group().encode("utf-16-be")
    return units[:2].decode("utf-16-be", "surrogatepass") + units[2:].decode("utf-16-be", "surrogatepass")


def encode_mutf8(text: str) -> bytes:
    """Java's writeUTF body (without the length): NUL as C0 80, supplementary characters as surrogate pairs."""
    if text.isascii() and "\0" not in text:
        return text.encode("ascii")
    return _NON_BMP.sub(_split_non_bmp, text).encode("utf-8", "surrogatepass").replace(b"\0", b"\xc0\x80")


def decode_mutf8(raw: bytes) -> str:
    """Inverse of encode_mutf8; raises ValueError for anything writeUTF would not have written.

    Only the canonical form is accepted (no raw NUL, no overlong or 4-byte sequences): decoding leniently
    and re-encoding must give the same bytes."""
    if raw.isascii():
        if b"\0" in raw:
            raise ValueError("invalid modified UTF-8: raw NUL byte (writeUTF encodes NUL as C0 80)")
        return raw.decode("ascii")
    try:
        text = raw.replace(b"\xc0\x80", b"\0").decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid modified UTF-8: {exc.reason} at string byte {exc.start}") from None
    if _SURROGATE.search(text):
        # Join surrogate pairs into one character, as the same UTF-16 sequence is in Java; keep lone ones.
        text = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    if encode_mutf8(text) != raw:
        raise ValueError("invalid modified UTF-8: not canonical (overlong, 4-byte or raw NUL sequence)")
    return text


def utf16_units(text: str) -> bytes:
    """Java's writeChars: big-endian UTF-16 code units (lone surrogates kept)."""
    return text.encode("utf-16-be", "surrogatepass")


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode as an unsigned 32-bit value."""
    h = 0
    if text.isascii():
        for char in text.encode("ascii"):
            h = (31 * h + char) & 0xFFFFFFFF
        return h
    units = utf16_units(text)
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h
