"""Shared by the klab Python tests: the repository's root and the `klab` CLI they compare with."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def klab_cli() -> str:
    """The klab executable: $KLAB_CLI (CI and scripts/gpu-python.sh set it; a wrong path fails),
    else `klab` on PATH; skipped (visibly) without either."""
    named = os.environ.get("KLAB_CLI")
    if named:
        assert Path(named).is_file(), f"KLAB_CLI={named} is no file"
        return named
    found = shutil.which("klab")
    if found is None:
        pytest.skip("no klab executable: set KLAB_CLI (e.g. build/release/klab)")
    return found
