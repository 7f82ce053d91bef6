"""The merchant-facing PayConex v4 API on the gateway API (``/api/v4/...``): what its operations share.

* :mod:`.auth`: who is calling (an account's ``api_accesskey``, or one of its API keys) and what it may do: the
  :class:`~.auth.Principal` every v4 operation asks for its scope before any other work;
* :mod:`.lists`: the original's list convention (a bare array, ``page`` / ``limit``, its ``X-*`` headers);
* :mod:`.errors`: the v4 errCodes (a member's validation, a missing scope), answered as the original's
  ``ApiViolation`` by :func:`vaultcore.iframe.violations.v4_errors`.

The operations themselves live with their data: the payment iFrame (:mod:`vaultcore.iframe`), and the merchants'
API keys, webhook endpoints, payments and dynamic descriptors in their own packages.
"""
