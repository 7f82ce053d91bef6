"""POST /api/v1/wallet_pay/get_wallet_pay_session: wiring only; the logic is vaultcore.wallet.session."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("wallet", "vaultcore.wallet.session:get_wallet_pay_session", aws=("dynamodb", "kms"),
                             # imported by the route on its usual path: during init instead
                             modules=("vaultcore.wallet.merchants", "vaultcore.gateway.accounts"))
