"""The original's PayConex v4 payments on the gateway API: ``payments/init``, a transaction's details and its meta.

* :mod:`.meta`: the original's ``TransactionMeta`` / ``TransactionUpdate`` members, validated, and never card data;
* :mod:`.records`: the meta item of one transaction (Registry, keyed by account and transaction id) and the
  QSAPI transaction's details in the original's ``TransactionDetails`` form;
* :mod:`.init_ids`: the QSAPI's two small checks of an init id (``transaction_id``), kept light: the gateway
  function imports it;
* :mod:`.routes`: the HTTP routes (wiring: ``functions/payments_v4/app.py``).
"""
