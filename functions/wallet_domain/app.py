"""GET /.well-known/{file}: the wallet domain association file; wiring only (vaultcore.wallet.wellknown)."""

from vaultcore.api.handler import api_handler
from vaultcore.wallet.wellknown import serve_association_file

lambda_handler = api_handler("wallet", serve_association_file, aws=("dynamodb",))
