"""Route reads on more than one core: read workers sharing the NameServer's port.

CPython runs one thread of Python at a time, so one process answers at most one core's
worth of route reads. With ``routeReadWorkers`` = N, the server starts N worker
processes that accept from the main process's listening socket (inherited: one socket,
so a process that exits resets nothing in its queue; server/sharedport.py) and answer
GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO from a replica of the tables; every other request on a
worker's connection is passed, as the same frame, to the main process, which owns
the tables. The package is organised by process:

- ``channel/``: what crosses between the two. ``generation.py``: one 8-byte counter in
  shared memory, bumped by the main process synchronously on every change a read could see
  (route tables, ORDER_TOPIC_CONFIG KV, configuration), before the request that caused it
  is answered. ``feed.py`` and ``delta.py``: the replica messages down each worker's stdin
  (route tables, KV namespace, properties, the generation they were taken at) and request
  counts up its stdout. ``unix.py``: the main process's UNIX sockets a worker connects to.
- ``main/`` (the main process): ``processes.py`` spawns and respawns the workers and
  collects their counts; ``publisher.py`` publishes a replica after changes (coalesced,
  within a share of the main process's time); ``forwarded.py`` serves the workers'
  forwarded connections, one per client connection, each preceded by the client's
  address; ``handoff.py`` adopts the brokers' sockets the workers hand over.
- ``worker/`` (a worker process, ``python -m namesrv.readworkers.worker``): ``entry.py``,
  ``replica.py``, ``connections.py`` (answers locally only while the replica's generation
  equals the shared counter, and forwards otherwise), ``handoff.py`` (the sending side),
  ``guards.py`` (TLS and ACL from the main process's files: the worker terminates TLS
  itself and checks the signatures of the reads it answers).

Why the answers stay those of one server: a worker answers from its replica only if
no change happened since it was taken, and the counter is bumped before any write is
acknowledged, so a read that starts after a write's answer sees that write (as with
Java's route lock). While a replica is stale the read goes to the main process. A
broker's connection on a worker is one forwarded connection on the main process:
registration binds to it, and closing it runs the usual housekeeping. A plain broker
connection is handed to the main process (SCM_RIGHTS, worker/handoff.py); a TLS one stays on
the worker, which relays its frames, because a TLS session cannot move with its socket.
"""
