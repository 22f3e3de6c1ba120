"""A read worker's client connections: local answers from the replica, the rest forwarded.

Each client connection that sends anything the worker may not answer itself gets its
own connection to the main process (``Upstream``), opened on first need: the main
process then sees one connection per client connection, so a broker's registration
binds to it and closing either side closes the other, as if the client were connected
to the main process itself.
"""

from twisted.internet import protocol
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.interfaces import IDispatcher
from namesrv.context import NullEventLog
from namesrv.protocol import writethrough
from namesrv.protocol.codec import decode_header
from namesrv.protocol.framing import LENGTH, complete_frames, framed
from namesrv.protocol.remoting import ConnectionState, RemotingProtocol
from namesrv.readworkers.worker.handoff import HANDOFF_CODES, can_hand_off, hand_off, started_request
from namesrv.readworkers.channel.unix import PEER, connect_unix, first_line
from namesrv.readworkers.worker.turns import TURN_READ_LIMIT, Turns
from namesrv.server.factory import NoHousekeeping, RemotingServerFactory

_READING, _WAITING, _WAITING_UNREAD = ConnectionState.READING, ConnectionState.WAITING, ConnectionState.WAITING_UNREAD


def _waiting(state):
    return state is _WAITING or state is _WAITING_UNREAD


def moves_to_main(request, connection):
    """A broker's request on a connection that may move to the main process now."""
    return request.code in HANDOFF_CODES and connection.factory.handoff_path and can_hand_off(connection)


@implementer(IDispatcher)
class WorkerDispatcher:
    """Answers the replica's local codes while it is fresh; hands a broker's connection to the
    main process; forwards everything else."""

    def __init__(self, replica):
        self.replica = replica

    def dispatch(self, request, connection):
        replica = self.replica
        if request.code in replica.local_codes and replica.fresh():
            return replica.registry.dispatch(request, connection)
        if moves_to_main(request, connection):
            connection.hand_off()
            return None
        connection.forward(connection.current_frame, expects_answer=not request.is_oneway)
        return None


class WorkerConnection(RemotingProtocol):
    """A client connection on a read worker; while others wait, it takes turns with them (turns.py).

    Its ``state`` (ConnectionState): READING handles what it reads at once (as much as the turns
    allow); WAITING has whole frames waiting for its turn, and what it reads waits behind them;
    WAITING_UNREAD read more than ``TURN_READ_LIMIT`` meanwhile, so its socket is not read until its
    turn is done; then READING again. PAUSED, CLOSING and MOVED (handed to the main process) are
    RemotingProtocol's. ``awaiting`` counts forwarded requests whose answer has not come back (a
    handover waits for them).
    """

    upstream = None
    current_frame = None
    awaiting = 0
    waiting_reads = 0   # reads waiting for a fresh replica (freshness.py)
    hedged = None       # opaque -> a WaitingRead whose copy went to the main process too (freshness.py)

    def dataReceived(self, data):
        if self.state is not _READING:
            # After what already waits, in order. A client pipelines a bounded number of reads before it
            # reads answers, so reading on costs nothing; past TURN_READ_LIMIT bytes the socket is not
            # read until the turn is done (a client that only writes cannot grow our memory).
            RemotingProtocol.dataReceived(self, data)
            if self.state is _WAITING and self.reader.buffered() > TURN_READ_LIMIT:
                self.state = _WAITING_UNREAD
                self.transport.pauseProducing()
            return
        if self.idle_timeout:
            self.resetTimeout()
        if not self.reader.buffer and self.answer_alone(data):
            return   # one frame: always within the turns' allowance (FIRST), answered from the cache
        self._read(data)

    def handle_buffered(self):
        """Resumed (its peer reads its answers again): what it read meanwhile goes as a new read."""
        self._read(None)

    def handle_frames(self, data=None, limit=None):
        RemotingProtocol.handle_frames(self, data, limit)
        if self.state is _READING and self.reader.waiting:
            self._hand_off_started()

    def _hand_off_started(self):
        """A broker's frame whose header is in and whose body is still arriving: hand the connection over
        now, with the bytes read so far (handoff.started_request). Every frame before it was handled."""
        if self.current_frame is not None:
            return   # called while a frame is being handled: it goes first, the whole-frame way
        request = started_request(self.reader)
        if request is not None and moves_to_main(request, self):
            self.hand_off()

    def _read(self, data):
        """Handle what the turns allow of ``data`` (after anything buffered); wait for a turn with the rest."""
        turns = self.factory.turns
        allowance = turns.allowance()
        if allowance < turns.quantum and self.reader.frames_waiting(data, up_to=allowance + 1) > allowance:
            # Others wait, or this pass is over budget: a client with a read or two goes now, a
            # deeper pipeline waits whole for its turn (cut in two, it would cost two writes).
            if data is not None:
                self.reader.buffer_more(data)
            self._wait()
            return
        self.handle_frames(data, allowance)
        if self.state is _READING and self.frames_waiting(up_to=1):
            self._wait()

    def _wait(self):
        self.state = _WAITING
        self.factory.turns.wait(self)

    def take_turn(self, quantum):
        """Handle up to ``quantum`` more frames; True while some are left (then it waits for another turn)."""
        if not _waiting(self.state):
            return False   # paused, closed or handed off since it queued
        self.handle_frames(None, quantum)
        if not _waiting(self.state):
            return False
        if self.frames_waiting(up_to=1):
            return True
        unread, self.state = self.state is _WAITING_UNREAD, _READING
        if unread:
            self.transport.resumeProducing()
        return False

    def pauseProducing(self):
        """Its peer does not read its answers: it leaves its turns until they drain (then reads again)."""
        if _waiting(self.state):
            self.factory.turns.leave(self)
        RemotingProtocol.pauseProducing(self)

    def frame_received(self, frame):
        self.current_frame = frame
        try:
            RemotingProtocol.frame_received(self, frame)
        finally:
            self.current_frame = None

    def hand_off(self):
        """Give this connection (the frame being handled, if any, and what was read after it) to the main process."""
        frame = self.current_frame
        unread = self.unread() if frame is None else framed(frame) + self.unread()
        self.moved()   # handle nothing more here
        self.factory.handoffs += 1
        hand_off(self.factory.reactor, self.factory.handoff_path, self, unread)

    def forward(self, frame, expects_answer=True):
        if self.closing:
            return
        if expects_answer:
            self.awaiting += 1
        if self.upstream is None:
            self.upstream = self.factory.open_upstream(self)
        self.upstream.send(frame)

    def hedge(self, frame, read):
        """Send a copy of ``read`` (a WaitingRead) to the main process too: the first answer goes out."""
        if self.closing:
            return
        if self.hedged is None:
            self.hedged = {}
        self.hedged[read.request.opaque] = read
        self.forward(frame)

    def from_main(self, data):
        """The main process's answers (whole frames): those to hedged reads the replica answered first go no
        further; the others go to the client, and a hedged read they answer stops waiting."""
        hedged = self.hedged
        if not hedged:
            return data
        kept = []
        offset, size = 0, len(data)
        while offset < size:
            end = offset + 4 + LENGTH.unpack_from(data, offset)[0]
            (word,) = LENGTH.unpack_from(data, offset + 4)
            header = data[offset + 8:offset + 8 + (word & 0xFFFFFF)]
            read = hedged.pop(decode_header((word >> 24) & 0xFF, header).opaque, None)
            if read is None or not read.answered_here:
                kept.append(data[offset:end])
                if read is not None:
                    read.answered_by_main()
            offset = end
        return b"".join(kept)

    def upstream_lost(self, upstream):
        """The main process closed our forwarded connection (or could not be reached): so do we."""
        if upstream is self.upstream and not self.closing:
            self.log.info("{peer}: the main process closed its side; closing", peer=self.peer)
            self.close()

    def write_frames(self, data):
        if self.transport is not None and self.connected and not self.closing:
            writethrough.write(self.transport, data)

    def connectionLost(self, reason=None):
        RemotingProtocol.connectionLost(self, reason)
        if self.upstream is not None:
            self.upstream.close()


class Upstream(protocol.Protocol):
    """One forwarded connection to the main process; whole answer frames go back to the client."""

    log = Logger()

    def __init__(self, downstream):
        self.downstream = downstream
        self._pending = []
        self._buffer = bytearray()
        self._closed = False

    def send(self, frame):
        data = framed(frame)
        if self.transport is None:
            self._pending.append(data)
        else:
            self.transport.write(data)

    def close(self):
        self._closed = True
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionMade(self):
        if self._closed:
            self.transport.loseConnection()
            return
        self.transport.write(first_line(PEER, self.downstream.peer))
        if self._pending:
            self.transport.write(b"".join(self._pending))
            self._pending = []

    def dataReceived(self, data):
        buffer = self._buffer
        buffer += data
        offset, frames = complete_frames(buffer)
        if offset:
            downstream = self.downstream
            downstream.awaiting = max(0, getattr(downstream, "awaiting", 0) - frames)
            # one copy, not two (a whole-table topic list, megabytes, passes here while this worker answers reads)
            data = downstream.from_main(bytes(memoryview(buffer)[:offset]))
            del buffer[:offset]
            if data:
                downstream.write_frames(data)

    def connectionLost(self, reason=None):
        self._closed = True
        self.downstream.upstream_lost(self)

    def connect_failed(self, failure):
        self.log.warn("cannot reach the main process for {peer}: {why}", peer=self.downstream.peer,
                      why=failure.getErrorMessage())
        self.connectionLost(failure)


class WorkerConnectionFactory(RemotingServerFactory):
    """The worker's listening factory: the replica's limits, and upstreams to ``socket_path``."""

    protocol_class = WorkerConnection

    def __init__(self, replica, socket_path, reactor, handoff_path=None):
        # the replica's config is one object, updated in place by each publication that changes it
        RemotingServerFactory.__init__(self, replica.dispatcher, replica.config, NoHousekeeping(),
                                       NullEventLog(), reactor, answer_cache=replica.answer_cache)
        self.replica = replica
        self.socket_path = socket_path
        self.handoff_path = handoff_path
        self.handoffs = 0
        self.turns = Turns(replica.context.scheduler)

    def open_upstream(self, connection):
        upstream = Upstream(connection)
        connect_unix(self.reactor, self.socket_path, upstream, upstream.connect_failed)
        return upstream
