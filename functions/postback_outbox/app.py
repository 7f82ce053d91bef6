"""DynamoDB stream event sources (Transactions and Deliveries tables): queues the postbacks recorded with their
transactions on the SQS FIFO postback queue; and, for one release, the SQS event of the standard postback queue of
the release before, whose messages it forwards there. Wiring only (vaultcore.postback.relay)."""

from vaultcore.postback.relay import relay
from vaultcore.runtime import init

init(aws=("sqs",))  # during Lambda init, not on the first batch

lambda_handler = relay
