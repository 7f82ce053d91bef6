"""POST /paymentMethods and POST /payments (the wallet flow's other request format): wiring only."""

from vaultcore.api.handler import api_handler
from vaultcore.wallet.checkout_api import checkout_route

lambda_handler = api_handler("checkout", checkout_route, aws=("dynamodb", "kms", "sqs"))
