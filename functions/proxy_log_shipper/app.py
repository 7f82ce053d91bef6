"""CloudWatch Logs subscription on the proxy's log group → ProxyLogs table; wiring only
(vaultcore.proxy.log_shipping)."""

from vaultcore.proxy.log_shipping import ship
from vaultcore.runtime import init

init(aws=("dynamodb",))  # during Lambda init, not on the first delivery

lambda_handler = ship
