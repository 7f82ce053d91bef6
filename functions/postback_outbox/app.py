"""DynamoDB stream event source (Deliveries table): queues the postbacks recorded with their transactions;
wiring only (vaultcore.postback.relay)."""

from vaultcore.postback.relay import relay
from vaultcore.runtime import init

init(aws=("sqs",))  # during Lambda init, not on the first batch

lambda_handler = relay
