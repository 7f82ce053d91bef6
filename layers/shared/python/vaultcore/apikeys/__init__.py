"""Merchants' API keys (the original's PayConex v4 ``api-keys`` and ``api-key-scopes``).

* :mod:`.catalog`: the scopes a key may hold (the original's ``APIKeyScopes``) with description, category, level;
* :mod:`.store`: the keys in the Registry table, their secrets KMS-wrapped, and the constant-time secret check;
* :mod:`.service`: create, list, read, change and delete, with the original's members and validation, and the
  rule that a key never grants more than the key that creates or changes it;
* :mod:`.routes`: the HTTP operations (wiring: ``functions/api_keys/app.py``);
* :mod:`.gateway`: a key standing in for ``api_accesskey`` on QSAPI and RSAPI, with a scope per transaction type.

Authentication of the v4 operations by key (Basic ``api_<id>:<secret>`` or the HMAC scheme) is
:func:`vaultcore.v4.auth.authenticate`.
"""
