"""Service settings: who may call (API keys per client) and the limits, in one typed object.

Keys are never stored: the keys file holds each client's sha256 of its key. ``new_key`` makes a key,
records its hash and returns the key once.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acceptgate._util.hashing import sha256_text
from acceptgate._util import boundedjson, outputs
from acceptgate._util.errors import InvalidInput

CLIENT_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"


class ClientKey(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=CLIENT_ID)
    key_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class KeysFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    clients: list[ClientKey] = Field(default_factory=list)


class Limits(BaseModel):
    """Per-service limits. Executions past ``max_executions`` wait in a queue of ``queue_size``;
    past that a request is refused with 503 and Retry-After (back-pressure, never unbounded memory)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_request_bytes: int = Field(default=8 << 20, ge=1024)
    max_executions: int = Field(default=2, ge=1)
    queue_size: int = Field(default=16, ge=0)
    queue_wait_seconds: float = Field(default=30.0, gt=0)
    rate_per_minute: float = Field(default=120.0, gt=0)
    burst: int = Field(default=20, ge=1)
    max_tasks_per_client: int = Field(default=10_000, ge=1)


class ServiceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    clients: dict[str, str]  # key sha256 -> client id
    journal: Path
    warehouse: Path | None = None  # None: decisions stay in the journal only
    backend: str = "local"
    limits: Limits = Limits()
    publish_seconds: float = 5.0
    model_base_url: str | None = None  # OpenAI-compatible endpoint for gated generations
    model_name: str | None = None
    model_key_env: str = "OPENAI_API_KEY"
    # a task is certified at registration and no decision is made on an uncertified one (False:
    # serve-api --no-certify, stored with every decision)
    certify: bool = True


def key_sha256(key: str) -> str:
    return sha256_text(key)


def client_for(clients: dict[str, str], key: str | None) -> str | None:
    """The client a presented key belongs to (constant-time comparison of hashes), else None."""
    if not key:
        return None
    digest = key_sha256(key)
    found = None
    for known, client in clients.items():
        if hmac.compare_digest(known, digest):
            found = client
    return found


def load_keys(path: str | Path) -> dict[str, str]:
    path = Path(path)
    try:
        doc = boundedjson.load_path(path)
    except FileNotFoundError:
        raise InvalidInput("no such keys file (make one with `acceptgate serve-api new-key`)",
                           source=str(path)) from None
    except (OSError, boundedjson.JSONInputError) as exc:
        raise InvalidInput(f"cannot read keys file: {exc}", source=str(path)) from None
    try:
        keys = KeysFile.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        record = f"client {loc[1]}" if len(loc) > 1 and loc[0] == "clients" else None
        raise InvalidInput(err["msg"], source=str(path), record=record,
                           field=".".join(str(p) for p in loc[2:]) or None) from None
    ids = [c.id for c in keys.clients]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InvalidInput(f"client ids appear twice: {', '.join(dup)}", source=str(path), field="clients")
    if not keys.clients:
        raise InvalidInput("no clients: add one with `acceptgate serve-api new-key`", source=str(path),
                           field="clients")
    return {c.key_sha256: c.id for c in keys.clients}


def new_key(path: str | Path, client: str) -> str:
    """Make a key for ``client``, record its hash in the keys file (created if absent), return the key."""
    path = Path(path)
    if path.exists():
        try:
            keys = KeysFile.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, OSError) as exc:
            raise InvalidInput(f"cannot read keys file: {exc}", source=str(path)) from None
    else:
        keys = KeysFile()
    try:
        ClientKey(id=client, key_sha256="0" * 64)
    except ValidationError:
        raise InvalidInput(f"a client id matches {CLIENT_ID}", record=repr(client), field="--client") from None
    key = "ag_" + secrets.token_urlsafe(32)
    others = [c for c in keys.clients if c.id != client]
    keys = KeysFile(clients=others + [ClientKey(id=client, key_sha256=key_sha256(key))])
    outputs.write_atomic(path, keys.model_dump_json(indent=2) + "\n", mode=0o600)  # key hashes: owner only
    return key
