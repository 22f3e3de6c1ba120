"""The link between two controllers: authenticated before a byte of content is decoded.

Controllers talk Raft on the controller port itself, as DLedger does: one address per controller
in ``controllerDLegerPeers``, one firewall rule. A member's connection starts with the 8 bytes of
``MAGIC``, which no RocketMQ frame starts with (as a frame length it is 1.3 GB); ``MemberSniffer``
sends every other connection to the remoting protocol unchanged.

The handshake proves that both ends hold the group's secret (``controllerPeerSecretFile``)
without sending it, and ties the session to fresh nonces from both sides, so nothing can be
replayed from another session:

    dialer -> HELLO     MAGIC | mode | id (32 bytes, NUL-padded) | nonce_d (32)            73 bytes
    accept -> CHALLENGE id (32) | nonce_a (32) | HMAC(secret, "accept" | HELLO | id | nonce_a)   96 bytes
    dialer -> PROOF     HMAC(secret, "dial" | HELLO | CHALLENGE)                              32 bytes

Each side then has a key per direction, ``HMAC(secret, direction | nonce_d | nonce_a)``, and every
frame is ``[u32 length][32-byte HMAC(key, sequence | payload)][payload]``: the length is checked
against ``MAX_FRAME`` and the MAC (with the frame's sequence number, so a frame cannot be replayed
or reordered) before the payload is decoded as msgpack (``codec.py``). Anything else closes the
link, logged once per peer address and reason.

The handshake messages have fixed sizes: nothing of variable length is read from an unauthenticated
peer. A group that opts out of authentication (``controllerPeerAuthDisabled``) runs the same
protocol with an empty secret: the checksums still catch a confused peer, but anyone can join, so
the server warns at every start. Even then nothing is unpickled.
"""

import hashlib
import hmac
import os
import struct

from twisted.internet import protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin

from namesrv.controller.replication.codec import CodecError, pack, unpack

MAGIC = b"RMQCTRL\x01"
ID_SIZE = 32
NONCE_SIZE = 32
MAC_SIZE = 32
HELLO_SIZE = len(MAGIC) + 1 + ID_SIZE + NONCE_SIZE
CHALLENGE_SIZE = ID_SIZE + NONCE_SIZE + MAC_SIZE
PROOF_SIZE = MAC_SIZE
MODE_SECRET = 1
MODE_OPEN = 2
#: the largest frame a member accepts (a snapshot travels in 64 KiB chunks, entries in 1 MiB batches)
MAX_FRAME = 8 << 20
_FRAME_HEAD = struct.Struct(">I")
_SEQ = struct.Struct(">Q")
#: seconds a new connection has to finish the handshake
HANDSHAKE_TIMEOUT = 5.0

log = Logger()


class LinkRefused(Exception):
    """Why a member link was closed (logged once per peer and reason)."""


def check_member_id(member_id):
    raw = member_id.encode("utf-8")
    if not raw or len(raw) > ID_SIZE or b"\0" in raw:
        raise ValueError("controller id %r must be 1-%d bytes of UTF-8" % (member_id, ID_SIZE))
    return raw


def _pad(member_id):
    return check_member_id(member_id).ljust(ID_SIZE, b"\0")


def _unpad(raw):
    try:
        return raw.rstrip(b"\0").decode("utf-8")
    except UnicodeDecodeError:
        raise LinkRefused("an id that is not UTF-8")


def _mac(key, *parts):
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


class Credentials:
    """The group's secret and this member's id; ``open`` (no secret) when authentication is off."""

    def __init__(self, self_id, secret, peers):
        self.self_id = self_id
        self.secret = secret or b""
        self.mode = MODE_SECRET if secret else MODE_OPEN
        self.peers = frozenset(peers) - {self_id}
        check_member_id(self_id)


class RefusalLog:
    """One warning per (peer host, reason): a scanner or a misconfigured member does not flood the log."""

    def __init__(self):
        self.seen = set()
        self.count = 0

    def refused(self, host, reason):
        self.count += 1
        if (host, reason) not in self.seen and len(self.seen) < 1024:
            self.seen.add((host, reason))
            log.warn("controller member link from {host} closed: {reason}", host=host, reason=reason)


class MemberLink(protocol.Protocol, TimeoutMixin):
    """One authenticated connection to another controller, either end. ``handler`` gets its life and frames:
    ``link_up(link)``, ``frame_received(link, value)``, ``link_down(link)``."""

    def __init__(self, credentials, handler, refusals, dialing=None, reactor=None):
        self.credentials = credentials
        self.handler = handler
        self.refusals = refusals
        self.dialing = dialing          # the peer id we called, or None when we accepted
        self.peer_id = dialing
        self.reactor = reactor
        self.up = False
        self._buffer = bytearray()
        self._state = "hello" if dialing is None else "challenge"
        self._hello = self._challenge = None
        self._nonce = os.urandom(NONCE_SIZE)
        self._send_key = self._recv_key = None
        self._send_seq = self._recv_seq = 0
        self.paused = False
        self.frames_in = self.frames_out = 0

    def callLater(self, period, func):
        reactor = self.reactor
        if reactor is None:
            from twisted.internet import reactor
        return reactor.callLater(period, func)

    # -- handshake ----------------------------------------------------------------------------------
    def connectionMade(self):
        self.setTimeout(HANDSHAKE_TIMEOUT)
        self.transport.registerProducer(self, True)
        if self.dialing is not None:
            self._hello = (MAGIC + bytes([self.credentials.mode]) + _pad(self.credentials.self_id) + self._nonce)
            self.transport.write(self._hello)

    def dataReceived(self, data):
        self._buffer += data
        try:
            while self.transport is not None and self._step():
                pass
        except (LinkRefused, CodecError) as e:
            self._refuse(str(e))

    def _step(self):
        if self._state == "hello":
            return self._take(HELLO_SIZE, self._on_hello)
        if self._state == "challenge":
            return self._take(CHALLENGE_SIZE, self._on_challenge)
        if self._state == "proof":
            return self._take(PROOF_SIZE, self._on_proof)
        if self._state == "frames":
            return self._on_frame()
        return False

    def _take(self, size, handler):
        if len(self._buffer) < size:
            return False
        chunk = bytes(self._buffer[:size])
        del self._buffer[:size]
        handler(chunk)
        return True

    def _on_hello(self, hello):
        if hello[:len(MAGIC)] != MAGIC:
            raise LinkRefused("not a controller member (bad magic)")
        mode = hello[len(MAGIC)]
        peer = _unpad(hello[len(MAGIC) + 1:len(MAGIC) + 1 + ID_SIZE])
        self._check_mode(mode, peer)
        if peer not in self.credentials.peers:
            raise LinkRefused("%r is not another member of controllerDLegerPeers" % peer)
        self.peer_id = peer
        self._hello = hello
        reply = _pad(self.credentials.self_id) + self._nonce
        self._challenge = reply + _mac(self.credentials.secret, b"accept", hello, reply)
        self.transport.write(self._challenge)
        self._state = "proof"

    def _on_challenge(self, challenge):
        peer = _unpad(challenge[:ID_SIZE])
        if peer != self.dialing:
            raise LinkRefused("%s answered as %r" % (self.dialing, peer))
        expected = _mac(self.credentials.secret, b"accept", self._hello, challenge[:ID_SIZE + NONCE_SIZE])
        if not hmac.compare_digest(expected, challenge[ID_SIZE + NONCE_SIZE:]):
            raise LinkRefused("%s does not hold the group's secret (controllerPeerSecretFile)" % peer)
        self._challenge = challenge
        self.transport.write(_mac(self.credentials.secret, b"dial", self._hello, challenge))
        self._keys(dialer_nonce=self._nonce, acceptor_nonce=challenge[ID_SIZE:ID_SIZE + NONCE_SIZE], dialer=True)

    def _on_proof(self, proof):
        expected = _mac(self.credentials.secret, b"dial", self._hello, self._challenge)
        if not hmac.compare_digest(expected, proof):
            raise LinkRefused("%s does not hold the group's secret (controllerPeerSecretFile)" % self.peer_id)
        self._keys(dialer_nonce=self._hello[-NONCE_SIZE:], acceptor_nonce=self._nonce, dialer=False)

    def _check_mode(self, mode, peer):
        if mode not in (MODE_SECRET, MODE_OPEN):
            raise LinkRefused("unknown authentication mode %d" % mode)
        if mode != self.credentials.mode:
            ours = "a secret" if self.credentials.mode == MODE_SECRET else "no authentication"
            raise LinkRefused("%r does not use the same member authentication (this member uses %s)" % (peer, ours))

    def _keys(self, dialer_nonce, acceptor_nonce, dialer):
        secret = self.credentials.secret
        to_acceptor = _mac(secret, b"to-acceptor", dialer_nonce, acceptor_nonce)
        to_dialer = _mac(secret, b"to-dialer", dialer_nonce, acceptor_nonce)
        self._send_key, self._recv_key = (to_acceptor, to_dialer) if dialer else (to_dialer, to_acceptor)
        self._state = "frames"
        self.setTimeout(None)
        self.up = True
        self.handler.link_up(self)

    # -- frames ----------------------------------------------------------------------------------------
    def _on_frame(self):
        head = _FRAME_HEAD.size + MAC_SIZE
        if len(self._buffer) < head:
            return False
        (length,) = _FRAME_HEAD.unpack_from(self._buffer)
        if length > MAX_FRAME:
            raise LinkRefused("a frame of %d bytes (at most %d)" % (length, MAX_FRAME))
        if len(self._buffer) < head + length:
            return False
        mac = bytes(self._buffer[_FRAME_HEAD.size:head])
        payload = bytes(self._buffer[head:head + length])
        del self._buffer[:head + length]
        if not hmac.compare_digest(mac, _mac(self._recv_key, _SEQ.pack(self._recv_seq), payload)):
            raise LinkRefused("a frame from %s failed its MAC (tampered, replayed or out of order)" % self.peer_id)
        self._recv_seq += 1
        self.frames_in += 1
        self.handler.frame_received(self, unpack(payload))
        return True

    def send(self, value):
        """Send one value (msgpack); False when the link is not up or the peer is not reading (dropped:
        Raft resends what matters)."""
        if not self.up or self.transport is None or self.paused:
            return False
        payload = pack(value)
        mac = _mac(self._send_key, _SEQ.pack(self._send_seq), payload)
        self._send_seq += 1
        self.frames_out += 1
        self.transport.write(_FRAME_HEAD.pack(len(payload)) + mac + payload)
        return True

    # -- IPushProducer: Twisted says when the peer stops reading -------------------------------------------
    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False

    def stopProducing(self):
        self.paused = True

    # -- the end ---------------------------------------------------------------------------------------
    def _refuse(self, reason):
        peer = self.transport.getPeer() if self.transport is not None else None
        self.refusals.refused(getattr(peer, "host", "?"), reason)
        self._state = "closed"
        self.close()

    def close(self):
        if self.transport is not None:
            abort = getattr(self.transport, "abortConnection", None) or self.transport.loseConnection
            abort()

    def timeoutConnection(self):
        self._refuse("no handshake within %.0f s" % HANDSHAKE_TIMEOUT)

    def connectionLost(self, reason=protocol.connectionDone):
        self.setTimeout(None)
        was_up, self.up = self.up, False
        self._state = "closed"
        if was_up:
            self.handler.link_down(self)


class MemberSniffer(protocol.Protocol, TimeoutMixin):
    """The controller port's first bytes decide: a member (``MAGIC``) or a RocketMQ client (anything else).

    A RocketMQ frame starts with its length, whose first byte is 0 for any frame under 16 MiB, so
    the first byte alone tells a client at once; a member's 8 magic bytes are then checked whole.
    The remoting protocol is built at accept time (so ``serverMaxConnections`` refuses there) and
    connected once the first byte says it is a client; until then the connection has
    ``serverChannelMaxIdleTimeSeconds`` to say anything.
    """

    def __init__(self, factory, addr, inner):
        self.factory = factory
        self.addr = addr
        self.inner = inner
        self._buffer = b""
        self.target = None

    def callLater(self, period, func):
        return self.factory.reactor.callLater(period, func)

    def connectionMade(self):
        timeout = self.factory.first_byte_timeout()
        if timeout:
            self.setTimeout(timeout)

    def dataReceived(self, data):
        self._buffer += data
        if self._buffer[:1] != MAGIC[:1]:
            return self._become(self.inner)
        if len(self._buffer) < len(MAGIC):
            return None
        if self._buffer[:len(MAGIC)] != MAGIC:
            self.factory.members.refusals.refused(getattr(self.addr, "host", "?"), "not a controller member")
            return self._close()
        return self._become(self.factory.members.accept())

    def _become(self, target):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        if target is None:
            return self._close()
        self.target = target
        data, self._buffer = self._buffer, b""
        target.makeConnection(self.transport)
        self.dataReceived = target.dataReceived
        if data and self.transport is not None and not getattr(self.transport, "disconnecting", False):
            target.dataReceived(data)
        return None

    def _close(self):
        abort = getattr(self.transport, "abortConnection", None) or self.transport.loseConnection
        abort()

    def timeoutConnection(self):
        self._close()

    def connectionLost(self, reason=protocol.connectionDone):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        if self.target is not None:
            self.target.connectionLost(reason)


class MemberSniffingFactory(protocol.Factory):
    """The controller port: RocketMQ clients go to ``remoting``, members to ``members.accept()``.

    Connections still waiting for their first byte count towards ``serverMaxConnections``."""

    noisy = False

    def __init__(self, remoting, members, reactor):
        self.remoting = remoting
        self.members = members
        self.reactor = reactor
        self.pending = set()

    def first_byte_timeout(self):
        return self.remoting.config.serverChannelMaxIdleTimeSeconds or None

    def doStart(self):
        self.remoting.doStart()

    def doStop(self):
        self.remoting.doStop()

    def buildProtocol(self, addr):
        limit = self.remoting.connection_limit()
        if limit and len(self.remoting.connections) + len(self.pending) >= limit:
            return None
        inner = self.remoting.buildProtocol(addr)
        if inner is None:
            return None
        sniffer = MemberSniffer(self, addr, inner)
        self.pending.add(sniffer)
        return sniffer
