"""SQS event source for postbacks: wiring only; delivery is vaultcore.postback.sender."""

from vaultcore.postback.consumer import handle_batch
from vaultcore.runtime import init

# During Lambda init, not on the first batch: the clients, and what a delivery imports lazily (the account's
# postback target, the egress client).
init(modules=("vaultcore.gateway.accounts", "vaultcore.net.http"), aws=("dynamodb", "kms", "sqs"))

lambda_handler = handle_batch
