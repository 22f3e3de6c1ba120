"""The controller (RocketMQ 5's RIP-44): broker ids, in-sync replica sets, epochs and master elections.

A module apart from the route tables, as Java's ``controller`` module is: nothing here imports
``namesrv.routes`` and nothing there imports this. The pieces, from the inside out:

- ``state``: the replicated state (per broker group: ids, addresses, master, epochs, in-sync set),
  changed only by applying events, pure Python with no clock and no sockets;
- ``decisions``: what a request means against that state (an answer and the events to apply);
- ``election``: which replica becomes master;
- ``heartbeats``: which brokers are alive (kept by each controller for itself, as Java does);
- ``replication``: the replicated log at one edge (one node with a file, or Raft through pysyncobj);
- ``core``: the leader's serial queue of operations, the inactive-master handling and notifications;
- ``processor``: the request codes, answered on the controller's port (Java's ``ControllerRequestProcessor``;
  found as the ``controller`` processor plugin, whose dropin names this module);
- ``service``: the controller's own port, timers and start-up, embedded in ``twistd namesrv`` or alone;
- ``metrics``: its Prometheus families; ``admin``: mqadmin's controller sub-commands for ``namesrv-admin``.
"""
