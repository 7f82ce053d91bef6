"""SQS event source for postbacks: wiring only; delivery is vaultcore.postback.sender."""

from vaultcore.postback.consumer import handle_batch

lambda_handler = handle_batch
