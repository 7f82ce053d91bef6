"""Domain errors shared by every service of the platform.

Pure modules (crypto, cards) raise ``ValueError`` subclasses of their own; domain services turn them into
``VaultError`` subclasses that carry the public error code and HTTP status of ``spec/public-facts.md``.
One module (:mod:`vaultcore.api.responses`) maps these errors to HTTP responses per API family, so handlers
carry no try/except of their own.

An error message must never contain card data, keys or secrets: it is returned to the caller and logged.
"""

from __future__ import annotations

__all__ = [
    "VaultError",
    "ValidationError",
    "AuthenticationFailed",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "PermissionDenied",
    "DependencyError",
]


class VaultError(Exception):
    """An error with a public code, an HTTP status and a message safe to show to the caller."""

    code: int = 1
    status: int = 500
    default_message: str = "Internal error."

    def __init__(self, message: str | None = None, *, code: int | None = None, status: int | None = None) -> None:
        self.message = message or self.default_message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, status={self.status}, message={self.message!r})"


class ValidationError(VaultError):
    """The request is malformed or a value is out of its documented range (HTTP 400)."""

    code = 400
    status = 400
    default_message = "Invalid request."


class AuthenticationFailed(VaultError):
    """Every authentication failure. The public answer is always the uniform 1003 body.

    ``reason`` is for the internal log only (never returned): it must not contain secrets.
    """

    code = 1003
    status = 401
    default_message = "Authentication required."

    def __init__(self, reason: str = "unspecified") -> None:
        super().__init__(self.default_message)
        self.reason = reason


class NotFound(VaultError):
    code = 404
    status = 404
    default_message = "Not found."


class MethodNotAllowed(VaultError):
    """The resource exists but not with this method (HTTP 405); ``allowed`` goes in the ``Allow`` header."""

    code = 405
    status = 405
    default_message = "Method not allowed on this resource."

    def __init__(self, allowed: tuple[str, ...] | list[str], message: str | None = None) -> None:
        super().__init__(message)
        self.allowed = tuple(allowed)


class Conflict(VaultError):
    code = 409
    status = 409
    default_message = "Conflict."


class PermissionDenied(VaultError):
    code = 403
    status = 403
    default_message = "Permission denied."


class DependencyError(VaultError):
    """An AWS service or another dependency failed; the caller sees a generic internal error."""

    code = 1
    status = 500
    default_message = "Internal error: a dependency is unavailable."
