"""The payment iFrame (issue 19): card and check capture that keeps merchants out of PCI scope.

* :mod:`.configs`: payment iFrame configurations (Registry), managed by the merchant's server with HTTP Basic
  ``account_id:api_accesskey`` on ``/api/v4/accounts/{account_id}/payment-iframe[/{id}]``;
* :mod:`.domains`: ``allowedParentDomains`` as CSP ``frame-ancestors`` host sources, and origin matching;
* :mod:`.instances`: instances and their short-lived bearer tokens (Signals table), the submission limit;
* :mod:`.page`: the iframe page (per-configuration CSP), ``checkout.js`` and ``frame.js``;
* :mod:`.capture`: a submission → values tokenized under the account's partner, the eToken (a bfid) bound to
  the account, the instance and its ``customId``;
* :mod:`.etoken`: the gateway's one-time, retry-aware read of an eToken (and the CVV's destruction);
* :mod:`.routes`: the HTTP routes (wiring: ``functions/iframe/app.py``);
* :mod:`.violations`: the original PayConex v4 ``ApiViolation`` error body on the ``/api/v4`` paths (issue 30).

DESIGN.md §8: the only code of ours that runs inside a page we do not control; small and dependency-free.
"""
