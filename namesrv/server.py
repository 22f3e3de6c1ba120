"""The listening side: builds a RemotingProtocol per connection and tracks them all."""

from twisted.internet import protocol
from twisted.logger import Logger

from namesrv.protocol.remoting import RemotingProtocol


class RemotingServerFactory(protocol.Factory):
    """Tracks every open connection so close/idle trigger broker housekeeping and stop closes them."""

    log = Logger()
    noisy = False

    def __init__(self, dispatcher, config, housekeeping, events):
        self.dispatcher = dispatcher
        self.config = config
        self.housekeeping = housekeeping
        self.events = events
        self.connections = {}

    def buildProtocol(self, addr):
        proto = RemotingProtocol(
            self.dispatcher,
            on_open=self._connection_opened,
            on_close=self._connection_closed,
            idle_timeout=self.config.serverChannelMaxIdleTimeSeconds or None,
            max_frame_length=self.config.maxFrameLength,
            on_bad_frame=self._bad_frame,
        )
        proto.factory = self
        return proto

    def _connection_opened(self, proto):
        self.connections[proto.connection_id] = proto

    def _connection_closed(self, proto):
        self.connections.pop(proto.connection_id, None)
        self.housekeeping.connection_closed(proto)

    def _bad_frame(self, proto, reason):
        self.events.emit("bad_frame", peer=proto.peer, reason=reason)

    def close_all(self):
        for proto in list(self.connections.values()):
            proto.close()
