"""The old main process's side of a takeover: stop taking work, then give everything away.

Order matters for "no registration lost": the read workers first hand all their
connections to this process (which keeps them, unread, instead of serving them), while
this process still serves its own connections and the forwarded ones (a worker waits for
its forwarded answers before it moves a connection). Once the workers are gone, this
process stops reading every connection and waits until no answer is pending and every
answer has left. Only then are the tables copied: nothing can change them after that,
and everything not yet read travels with the sockets to the new process.
"""

import os

from namesrv.readworkers.main.handoff import adopt_connection
from namesrv.readworkers.worker.handoff import detach, movable, quiet, stop_reading
from namesrv.server.factory import NoHousekeeping

class ServerDrain:
    """Drains a server (its ServerParts, ``server``) whose dispatcher is counted by ``inflight``."""

    def __init__(self, server, inflight):
        self.server = server
        self.inflight = inflight
        self.collected = []   # (descriptor, peer, unread): sockets handed to us by our workers
        self.begun = False

    def _factories(self):
        factories = [self.server.factory]
        pool = self.server.read_workers
        if pool is not None and pool.forwarded is not None:
            factories.append(pool.forwarded)
        return factories

    def connections(self):
        return [c for f in self._factories() for c in list(f.connections.values()) if not c.closing]

    def begin(self):
        """Stop accepting and start the workers' drain. Closing a connection from now on is the
        server leaving, not a broker: no housekeeping."""
        self.begun = True
        for factory in self._factories():
            factory.housekeeping = NoHousekeeping()
        port = self.server.port
        if hasattr(port, "stopReading"):
            port.stopReading()   # our accepting only: the socket and its queue live on
        pool = self.server.read_workers
        if pool is not None:
            pool.divert = self._collect
            pool.drain()

    def _collect(self, descriptor, peer, unread):
        self.collected.append((descriptor, peer, unread))

    def settled(self):
        """True once the workers are gone and no connection here has anything in flight."""
        pool = self.server.read_workers
        if pool is not None and not pool.drained():
            return False
        connections = self.connections()
        for connection in connections:
            stop_reading(connection)
        return self.inflight.count == 0 and all(quiet(c) for c in connections)

    def detach_clients(self):
        """Every client connection (the workers' and ours) as (descriptor, peer, unread), ours closed;
        TLS ones are closed (their clients reconnect). Returns (movable sockets, number closed).

        Clients go first: a client waits for its socket's move to be answered again; a broker's next
        heartbeat is 30 s away, and it is the one with bytes to handle."""
        moving, self.collected = self.collected, []
        brokers = self.server.routes.tables.by_connection
        return self._detach([c for c in self.connections() if c not in brokers], moving)

    def detach_brokers(self):
        """``detach_clients`` for the rest: the brokers' connections (after the clients')."""
        return self._detach(self.connections(), [])

    @staticmethod
    def _detach(connections, moving):
        closed = 0
        for connection in connections:
            if movable(connection):
                descriptor, unread = detach(connection)
                moving.append((descriptor, connection.peer, unread))
            else:
                connection.close()
                closed += 1
        return moving, closed

    def release(self, moving):
        """Close descriptors that could not be sent."""
        for descriptor, _, _ in moving:
            try:
                os.close(descriptor)
            except OSError:
                pass

    def resume(self):
        """The takeover failed before any connection moved: serve everything here again."""
        server = self.server
        for factory in self._factories():
            factory.housekeeping = server.housekeeping
        for connection in self.connections():
            transport = connection.transport
            if hasattr(transport, "registerProducer") and getattr(transport, "producer", None) is None:
                transport.registerProducer(connection, True)
            if not connection.paused and hasattr(transport, "startReading"):
                transport.startReading()
        collected, self.collected = self.collected, []
        for descriptor, peer, unread in collected:
            adopt_connection(server.reactor, server.factory, descriptor, peer, unread)
        if hasattr(server.port, "startReading"):
            server.port.startReading()
        pool = server.read_workers
        if pool is not None:
            pool.divert = None
            pool.draining = False
            for index in range(pool.count):
                if index not in pool.workers:
                    pool._spawn(index)
            pool.cover()   # accept here until the restarted workers listen
        self.begun = False
