"""Shared fixtures: where ../shared is (tests that need it skip with a clear reason when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(__import__("os").environ.get("RAYSIM_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "README.md").exists():
        pytest.skip(f"../shared not found at {SHARED} (set RAYSIM_SHARED to run this test)")
    return SHARED


@pytest.fixture(scope="session")
def venus_dir(shared_dir) -> Path:
    return shared_dir / "traces" / "venus_sept"
