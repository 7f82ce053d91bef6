"""CloudWatch Logs subscription on the proxy's log group → ProxyLogs table; wiring only
(vaultcore.proxy.log_shipping)."""

from vaultcore.proxy.log_shipping import ship
from vaultcore.runtime import init

# During Lambda init, not on the first delivery: the client, and what ship() imports lazily.
init(modules=("vaultcore.settings", "vaultcore.store.ddb"), aws=("dynamodb",))

lambda_handler = ship
