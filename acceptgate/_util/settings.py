"""acceptgate's configuration: one typed object, read from the environment once per process.

Every setting has a default that works on a fresh machine; a command-line option, where one exists
(``--warehouse``), wins over the setting. The variables (documented in the docs' configuration page):

| variable | setting | default |
| --- | --- | --- |
| ACCEPTGATE_WAREHOUSE | warehouse | data/warehouse.duckdb (relative to the working directory) |
| ACCEPTGATE_WAREHOUSE_LOCK_TIMEOUT | warehouse_lock_timeout | 120 (seconds a writer waits for the lock) |
| ACCEPTGATE_WAREHOUSE_MEMORY | warehouse_memory | 256MB (DuckDB's memory_limit for a writer) |
| ACCEPTGATE_CACHE_DIR | cache_dir | $XDG_CACHE_HOME/acceptgate, else ~/.cache/acceptgate |
| ACCEPTGATE_IMPORT_CACHE | import_cache | on (off/0/false/no turns the import cache off) |
| ACCEPTGATE_SANDBOX_IMAGE | sandbox_image | none: the Docker backend builds an image of this host's Python |
| ACCEPTGATE_EXPECTATIONS | expectations | none: the expectation suites that ship with acceptgate |
| PREFECT_HOME | prefect_home | <cache_dir>/prefect (Prefect's own variable, read by Prefect too) |
| ACCEPTGATE_TEST_PAUSE_AT | test_pause_at | none (a test hook: stop the process at named points) |

An invalid value is invalid input (exit 2) naming the variable.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from acceptgate._util.errors import InvalidInput

PREFIX = "ACCEPTGATE_"
OFF = ("off", "0", "false", "no")


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acceptgate"


class Settings(BaseSettings):
    """The settings; see the module's table. Frozen: read once, never changed in a process."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="ignore", case_sensitive=False)

    warehouse: Path = Path("data") / "warehouse.duckdb"
    warehouse_lock_timeout: float = Field(120.0, ge=0)
    warehouse_memory: str = "256MB"
    cache_dir: Path = Field(default_factory=_default_cache_dir)
    import_cache: bool = True
    sandbox_image: str | None = None
    expectations: Path | None = None
    prefect_home: Path | None = Field(None, validation_alias=AliasChoices("PREFECT_HOME"))
    test_pause_at: Annotated[tuple[str, ...], NoDecode] = ()  # comma-separated names

    @field_validator("import_cache", mode="before")
    @classmethod
    def _switch(cls, value: object) -> object:
        return False if isinstance(value, str) and value.strip().lower() in OFF else value

    @field_validator("test_pause_at", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        return tuple(n for n in value.split(",") if n) if isinstance(value, str) else value

    @field_validator("sandbox_image", "expectations", "prefect_home", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def prefect_home_path(self) -> Path:
        """Where Prefect keeps its database and settings: PREFECT_HOME, else under the cache."""
        return (self.prefect_home or self.cache_dir / "prefect").expanduser()

    @property
    def imports_dir(self) -> Path:
        return self.cache_dir.expanduser() / "imports"


def env_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    return "PREFECT_HOME" if field == "prefect_home" else PREFIX + field.upper()


@functools.cache
def settings() -> Settings:
    """The process's settings, read from the environment on first use."""
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first.get("loc") else "?"
        name = field if field.isupper() else env_name(field)
        raise InvalidInput(f"{first['msg']} (got {os.environ.get(name)!r})", source=f"${name}") from None


def reload() -> Settings:
    """Read the environment again (tests that change it in-process; nothing else should need this)."""
    settings.cache_clear()
    return settings()
