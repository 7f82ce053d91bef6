"""Imports every management route module so their routes register (the management function's one import)."""

from vaultcore.admin import (
    accounts,  # noqa: F401
    foundation,  # noqa: F401
    postbacks,  # noqa: F401
    proxy,  # noqa: F401
    tokens,  # noqa: F401
    wallet,  # noqa: F401
)
from vaultcore.admin.router import dispatch

__all__ = ["dispatch"]
