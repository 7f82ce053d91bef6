"""Scheduled (daily): how long the stored wallet certificates have left; wiring only
(vaultcore.wallet.certificate_expiry)."""

from vaultcore.runtime import init
from vaultcore.wallet.certificate_expiry import check

init(aws=("dynamodb",))  # during Lambda init, not on the first check

lambda_handler = check
