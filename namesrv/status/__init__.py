"""The read-only status page: what the tables hold, at a glance, in a browser (``statusListenPort``).

Served by ``twisted.web`` from the main process. Every request computes only what one page
shows (50 rows), so 1,000 brokers and 100,000 topics cost milliseconds, not a full render.
The Java NameServer has no such page (operators use ``mqadmin`` or the RocketMQ dashboard).
"""
