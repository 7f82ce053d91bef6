"""POST /paymentMethods and POST /payments (the wallet flow's other request format): wiring only."""

from vaultcore.api.handler import api_handler

lambda_handler = api_handler("checkout", "vaultcore.wallet.checkout_api:checkout_route", aws=("dynamodb", "kms", "sqs"),
                             # imported by the route on its usual path: during init instead
                             modules=("vaultcore.wallet.merchants", "vaultcore.gateway.accounts"))
