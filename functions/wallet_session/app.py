"""POST /api/v1/wallet_pay/get_wallet_pay_session: wiring only; the logic is vaultcore.wallet.session."""

from vaultcore.api.handler import api_handler
from vaultcore.wallet.session import get_wallet_pay_session

lambda_handler = api_handler("wallet", get_wallet_pay_session, aws=("dynamodb", "kms"))
