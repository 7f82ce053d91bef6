"""The original's PayConex v4 dynamic descriptors: what a card statement shows for one transaction.

* :mod:`.records`: the account's descriptors (CRUD, the list's search) and :func:`.records.resolve`, the QSAPI's
  lookup of the one a SALE names (``dynamic_descriptor_id``), kept light: the gateway function imports it;
* :mod:`.routes`: the HTTP routes (wiring: ``functions/dynamic_descriptors/app.py``).
"""
