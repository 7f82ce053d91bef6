"""POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}: wiring only; the logic is
vaultcore.proxy.service."""

# Cold start: what every exchange uses is imported during init (the proxy's modules import these lazily because
# the management API imports them too and never authenticates a partner, tokenizes, forwards or emits a log
# line). What only some configurations need is imported where it is first used, not here: jsonpath_ng (a JSONPath
# place), regex (a regex place or mask: vaultcore.net.safe_regex), lxml (XML bodies). Init and the first request
# are both in a cold start (bench/bench_cold_start.py); tests/unit/test_import_cost.py keeps these three out.
import vaultcore.auth.authenticator  # noqa: F401  - the partner's HMAC or Basic credentials
import vaultcore.net.http  # noqa: F401  - the egress client
import vaultcore.proxy.log_shipping  # noqa: F401  - the masked exchange, one line on stdout
import vaultcore.tokens.service  # noqa: F401  - tokenize and detokenize actions
from vaultcore.api.handler import api_handler
from vaultcore.proxy.service import handle_proxy

lambda_handler = api_handler("proxy", handle_proxy, aws=("dynamodb", "kms", "payment-cryptography-data@prod"))
