"""CloudWatch Logs subscription on the proxy's log group → ProxyLogs table; wiring only
(vaultcore.proxy.log_shipping)."""

from vaultcore.proxy.log_shipping import ship

lambda_handler = ship
