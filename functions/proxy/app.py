"""POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}: wiring only; the logic is
vaultcore.proxy.service."""

# Cold start: what an exchange imports where it is used, imported during init instead (free in Lambda's init phase,
# not on the first request). The proxy's modules import these lazily because the management API imports them too
# (configurations, dry runs, logs) and never authenticates a partner, tokenizes, forwards or emits a log line.
# lxml (XML bodies only) stays lazy.
import jsonpath_ng.jsonpath  # noqa: F401  - a configuration's JSON paths, compiled on its first use
import regex  # noqa: F401  - its bounded regexes (vaultcore.net.safe_regex)

import vaultcore.auth.authenticator  # noqa: F401  - the partner's HMAC or Basic credentials
import vaultcore.net.http  # noqa: F401  - the egress client
import vaultcore.proxy.log_shipping  # noqa: F401  - the masked exchange, one line on stdout
import vaultcore.tokens.service  # noqa: F401  - tokenize and detokenize actions
from vaultcore.api.handler import api_handler
from vaultcore.proxy.service import handle_proxy

lambda_handler = api_handler("proxy", handle_proxy, aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
