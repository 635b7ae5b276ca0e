"""livetok's installed version, looked up on first use (``importlib.metadata`` takes ~35 ms
here, too much to pay on every ``livetok count``)."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["livetok_version"]


@lru_cache(maxsize=1)
def livetok_version() -> str:
    """The version of the installed ``livetok`` distribution (``0+unknown`` when the package
    is imported from a source tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("livetok")
    except PackageNotFoundError:
        return "0+unknown"
