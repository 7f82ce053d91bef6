"""Scheduled: queues postbacks the gateway kept in its outbox; wiring only (vaultcore.postback.outbox)."""

from vaultcore.postback.outbox import sweep
from vaultcore.runtime import init

init(aws=("dynamodb", "kms", "sqs"))  # during Lambda init, not on the first sweep

lambda_handler = sweep
