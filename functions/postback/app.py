"""SQS event source for postbacks: wiring only; delivery is vaultcore.postback.sender."""

from vaultcore.postback.consumer import handle_batch
from vaultcore.runtime import init

init(aws=("dynamodb", "kms", "sqs"))  # during Lambda init, not on the first batch

lambda_handler = handle_batch
