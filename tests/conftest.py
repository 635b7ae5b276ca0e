"""Shared test configuration.

Hypothesis runs seeded (``derandomize``) with an example count taken from the environment:
``LIVETOK_EXAMPLES`` (default 60) so CI stays fast and a long fuzz is one variable away::

    LIVETOK_EXAMPLES=5000 .venv/bin/python -m pytest tests/property/test_document.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("LIVETOK_EXAMPLES", "60"))
settings.register_profile(
    "livetok",
    max_examples=EXAMPLES,
    derandomize=os.environ.get("LIVETOK_RANDOM") != "1",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile("livetok")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TRACES = SHARED / "traces"


def pytest_collection_modifyitems(config, items):
    if os.environ.get("LIVETOK_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set LIVETOK_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
