"""The listening side: builds a RemotingProtocol per connection and tracks them all."""

import resource

from twisted.internet import protocol
from twisted.logger import Logger

from namesrv.protocol.remoting import FrameLimits, RemotingProtocol


#: descriptors kept free for the server's own files and threads
DESCRIPTOR_RESERVE = 64


class RemotingServerFactory(protocol.Factory):
    """Tracks every open connection, so close/idle trigger broker housekeeping and stop closes them all.

    Above ``serverMaxConnections`` a new connection is closed at once (Java has no
    such limit and lets a connection storm exhaust its file descriptors).
    """

    log = Logger()
    noisy = False
    protocol_class = RemotingProtocol

    def __init__(self, dispatcher, config, housekeeping, events, reactor=None, answer_cache=None):
        self.dispatcher = dispatcher
        self.config = config
        self.housekeeping = housekeeping
        self.events = events
        self.reactor = reactor
        self.connections = {}
        self.refused = 0
        self.answer_cache = answer_cache   # an AnswerCache shared by every connection, or None

    def connection_limit(self):
        """``serverMaxConnections``, clamped so that connections never take the descriptors
        the server needs for itself (KV and config writes, snapshots, the event log)."""
        limit = self.config.serverMaxConnections
        try:
            soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        except (OSError, ValueError):
            return limit
        if soft == resource.RLIM_INFINITY:
            return limit
        ceiling = max(1, soft - DESCRIPTOR_RESERVE)
        return min(limit, ceiling) if limit else ceiling

    def buildProtocol(self, addr):
        limit = self.connection_limit()
        if limit and len(self.connections) >= limit:
            self.refused += 1
            if self.refused == 1 or self.refused % 1000 == 0:
                self.log.warn("connection from {peer} refused: {n} connections open (serverMaxConnections); "
                              "{refused} refused so far", peer=addr, n=len(self.connections), refused=self.refused)
            return None
        proto = self.protocol_class(
            self.dispatcher,
            on_open=self._connection_opened,
            on_close=self._connection_closed,
            idle_timeout=self.idle_timeout(),
            max_frame_length=self.config.maxFrameLength,
            on_bad_frame=self._bad_frame,
            slow_reader_timeout=self.config.serverSlowReaderTimeoutSeconds or None,
            reactor=self.reactor,
            limits=FrameLimits.from_config(self.config),
            answer_cache=self.answer_cache,
            address=addr,
        )
        proto.factory = self
        return proto

    def idle_timeout(self):
        return self.config.serverChannelMaxIdleTimeSeconds or None

    def _connection_opened(self, proto):
        self.connections[proto.connection_id] = proto

    def _connection_closed(self, proto):
        self.connections.pop(proto.connection_id, None)
        self.housekeeping.connection_closed(proto)

    def _bad_frame(self, proto, reason):
        self.events.emit("bad_frame", peer=proto.peer, reason=reason)

    def close_all(self):
        """Close every connection at shutdown, without housekeeping: the server leaves, not the brokers."""
        self.housekeeping = NoHousekeeping()
        for proto in list(self.connections.values()):
            proto.close()


class NoHousekeeping:
    """Closing a connection touches no broker (shutdown; read workers, whose main process does it)."""

    def connection_closed(self, connection):
        pass
