"""Scheduled: queues postbacks the gateway kept in its outbox; wiring only (vaultcore.postback.outbox)."""

from vaultcore.postback.outbox import sweep

lambda_handler = sweep
