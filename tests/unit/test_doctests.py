"""Run the docstring examples of every core module."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import livetok.incremental as core

MODULES = sorted(m.name for m in pkgutil.walk_packages(core.__path__, core.__name__ + "."))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:  # an optional encoding whose dependency is missing
        pytest.skip(f"{name}: {exc}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
