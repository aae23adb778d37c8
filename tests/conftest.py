"""Shared fixtures. Data comes from ../shared/data (never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    return Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path} (set ACCEPTGATE_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def humanevalplus_path(shared_data: Path) -> Path:
    return shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"


@pytest.fixture(scope="session")
def codet_samples_path(shared_data: Path) -> Path:
    return shared_data / "samples" / "codet_codegen16B.jsonl.gz"


@pytest.fixture(scope="session")
def local_backend():
    from acceptgate.sandbox import backend

    with backend.create("local") as b:
        yield b
