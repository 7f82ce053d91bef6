"""GET /.well-known/{file}: the wallet domain association file; wiring only (vaultcore.wallet.wellknown)."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("wallet", "vaultcore.wallet.wellknown:serve_association_file", aws=("dynamodb",))
