"""The one sha256 of a text, of bytes and of a file, hex-encoded, used for every content hash of the project."""

from __future__ import annotations

import hashlib
import os


def sha256_text(text: str) -> str:
    """Of the text's UTF-8 bytes (lone surrogates kept, as a program may hold them)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Of the file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
