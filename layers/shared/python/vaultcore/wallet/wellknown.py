"""``GET /.well-known/{file}``: the wallet domain association file of the account that owns the host.

The wallet vendor fetches ``https://<shop domain>/.well-known/<file>`` to verify a domain (spec: served as
``Content-Type: text/plain``, not behind a redirect or password). The shop domain points at the gateway API's
custom domain, so the ``Host`` header names the domain, the domain names its account (a domain belongs to one
account: :mod:`vaultcore.wallet.settings`), and the account's stored file of that name is served. Anything
else is a plain 404 with no detail, so the endpoint cannot be used to learn which domains or accounts exist.
"""

from __future__ import annotations

from vaultcore.api.http import Request, Response
from vaultcore.wallet import settings as wallet_settings

__all__ = ["serve_association_file"]

_NOT_FOUND = Response(404, "Not Found\n", {"Content-Type": "text/plain"})


def serve_association_file(request: Request) -> Response:
    name = request.path_params.get("file", "")
    host = request.header("host") or ""
    account_id = wallet_settings.account_for_domain(host)
    content = wallet_settings.get_association_file(account_id, name) if account_id else None
    if content is None:
        return _NOT_FOUND
    return Response(200, content, {"Content-Type": "text/plain", "Cache-Control": "public, max-age=300",
                                   "X-Content-Type-Options": "nosniff"})
