"""The link between two controllers: each proves which member it is before a byte of content is decoded.

Controllers talk Raft on the controller port itself, as DLedger does: one address per controller.
A member's connection starts with ``PREFIX`` and a version byte, which no RocketMQ frame starts
with (as a frame length it is 1.3 GB); ``sniffing.py`` sends every other connection to the
remoting protocol unchanged.

Member-link format version 2 (version 1 proved the group's secret only). Every handshake message
has a fixed size, so nothing of variable length is read from a peer that has not proven itself::

    dialer -> HELLO     PREFIX | version | mode | id (32) | nonce (32) | X25519 (32) | state (21)    126 bytes
    accept -> CHALLENGE PREFIX | version | id | nonce | X25519 | state | MAC (32) | signature (64)  221 bytes
    dialer -> PROOF     MAC (32) | signature (64)                                                      96 bytes

``state`` is the member's group epoch (u32), generation (16 bytes) and flags (bit 0: a fresh
store), which fence the members a forced new group left behind (``fencing.py``). The MAC is
HMAC-SHA256 with the group's secret (``controllerPeerSecretFile``) over the transcript so far; the
signature is the member's Ed25519 key over the same (``identity.py``), checked with the keys the
members file lists for the id the peer claims: holding the secret proves the group, the signature
proves the member. The session's keys come from an X25519 exchange mixed with the secret, so that a
member that was removed, even holding the secret, can neither take another member's id nor
inject into another member's session. Every frame is then ``[u32 length][32-byte HMAC(key,
sequence | payload)][payload]``; the length is checked against ``MAX_FRAME`` and the MAC before the
payload is decoded as msgpack (``codec.py``). Anything else closes the link, logged once per peer
address and reason.

A peer speaking another version is answered with our ``PREFIX | version`` and closed; both ends
log one line naming both versions, so a rolling upgrade never fails silently.

A group that opts out of authentication (``controllerPeerAuthDisabled``) runs the same protocol
with an empty secret and no signatures: the checksums still catch a confused peer, but anyone can
join as anyone, so the server warns at every start. Even then nothing is unpickled.
"""

import hashlib
import hmac
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional, Protocol, Union

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from twisted.internet import protocol
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure

from namesrv.controller.replication.codec import CodecError, pack, unpack
from namesrv.controller.replication.identity import SIGNATURE_SIZE, MemberIdentity

PREFIX = b"RMQCTRL"
#: the member-link format this code speaks (1: the group's secret only, no member keys, no fencing)
LINK_VERSION = 2
MAGIC = PREFIX + bytes([LINK_VERSION])
HEAD_SIZE = len(MAGIC)
ID_SIZE = 32
NONCE_SIZE = 32
DH_SIZE = 32
MAC_SIZE = 32
_STATE = struct.Struct(">I16sB")
STATE_SIZE = _STATE.size
HELLO_SIZE = HEAD_SIZE + 1 + ID_SIZE + NONCE_SIZE + DH_SIZE + STATE_SIZE
_CHALLENGE_BODY = HEAD_SIZE + ID_SIZE + NONCE_SIZE + DH_SIZE + STATE_SIZE
CHALLENGE_SIZE = _CHALLENGE_BODY + MAC_SIZE + SIGNATURE_SIZE
PROOF_SIZE = MAC_SIZE + SIGNATURE_SIZE
MODE_SECRET = 1
MODE_OPEN = 2
FLAG_FRESH = 1
#: the largest frame a member accepts (a snapshot travels in 64 KiB chunks, entries in 1 MiB batches)
MAX_FRAME = 8 << 20
_FRAME_HEAD = struct.Struct(">I")
_SEQ = struct.Struct(">Q")
#: seconds a new connection has to finish the handshake
HANDSHAKE_TIMEOUT = 5.0
_NO_SIGNATURE = bytes(SIGNATURE_SIZE)

log = Logger()


class LinkRefused(Exception):
    """Why a member link was closed (logged once per peer and reason). ``flush``: what was written before
    (our version, our proof) still goes out before the close."""

    def __init__(self, reason: str, flush: bool = False) -> None:
        Exception.__init__(self, reason)
        self.flush = flush


def check_member_id(member_id: str) -> bytes:
    raw = member_id.encode("utf-8")
    if not raw or len(raw) > ID_SIZE or b"\0" in raw:
        raise ValueError("controller id %r must be 1-%d bytes of UTF-8" % (member_id, ID_SIZE))
    return raw


def _pad(member_id: str) -> bytes:
    return check_member_id(member_id).ljust(ID_SIZE, b"\0")


def _unpad(raw: bytes) -> str:
    try:
        return raw.rstrip(b"\0").decode("utf-8")
    except UnicodeDecodeError:
        raise LinkRefused("an id that is not UTF-8")


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def version_refusal(head: bytes) -> str:
    """The one line both ends log when a peer's first 8 bytes name another member-link version."""
    return "speaks member-link format version %d; this member speaks version %d (upgrade both to one version)" % (
        head[len(PREFIX)], LINK_VERSION)


class GroupState:
    """What a member says of its store in the handshake: the group epoch and generation it belongs to, and
    whether it is fresh (nothing applied yet: it may join any generation)."""

    __slots__ = ("epoch", "generation", "fresh")

    def __init__(self, epoch: int = 0, generation: bytes = b"", fresh: bool = True) -> None:
        self.epoch = epoch
        self.generation = bytes(generation).ljust(16, b"\0")[:16]
        self.fresh = fresh

    def pack(self) -> bytes:
        return _STATE.pack(self.epoch, self.generation, FLAG_FRESH if self.fresh else 0)

    @classmethod
    def unpack(cls, raw: bytes) -> "GroupState":
        epoch, generation, flags = _STATE.unpack(raw)
        return cls(epoch, generation, bool(flags & FLAG_FRESH))

    def same_group(self, other: "GroupState") -> bool:
        return self.fresh or other.fresh or (self.epoch, self.generation) == (other.epoch, other.generation)

    def describe(self) -> str:
        return "epoch %d, generation %s" % (self.epoch, self.generation.hex()[:12] or "-")


class Credentials:
    """This member's id, the group's secret(s) and its identity (``identity.MemberIdentity``), and what the
    link asks of the configuration: ``knows(id)`` (a member the link may speak with), ``state()``
    (a ``GroupState``) and ``fenced(peer, state)`` (a newer group proved we are left behind).

    ``is_fenced(id)``: a member our forced new group left behind, dialled only to tell it so.

    ``secrets``: the first signs our side of handshakes, any of them is accepted (a new secret is added
    as a second line of the secret file on every member first). Empty: authentication is off.
    """

    def __init__(self, self_id: str, secrets: Union[bytes, Sequence[bytes], None], peers: Iterable[str] = (),
                 identity: Optional[MemberIdentity] = None, knows: Optional[Callable[[str], bool]] = None,
                 state: Optional[Callable[[], GroupState]] = None,
                 fenced: Optional[Callable[[str, GroupState], object]] = None,
                 is_fenced: Optional[Callable[[str], bool]] = None) -> None:
        if isinstance(secrets, bytes):
            secrets = [secrets]
        self.self_id = self_id
        self.secrets = [s for s in (secrets or ()) if s]
        self.secret = self.secrets[0] if self.secrets else b""
        self.mode = MODE_SECRET if self.secrets else MODE_OPEN
        self.identity = identity
        others = frozenset(peers) - {self_id}
        self.knows: Callable[[str], bool] = knows or (lambda peer: peer in others)
        self.state: Callable[[], GroupState] = state or GroupState
        self.fenced: Callable[[str, GroupState], object] = fenced or (lambda peer, theirs: None)
        self.is_fenced: Callable[[str], bool] = is_fenced or (lambda peer: False)
        check_member_id(self_id)
        if self.mode == MODE_SECRET and identity is None:
            raise ValueError("a group with a secret needs member keys (controllerMembersFile)")


class RefusalLog:
    """One warning per (peer host, reason): a scanner or a misconfigured member does not flood the log."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.count = 0

    def refused(self, host: str, reason: str) -> None:
        self.count += 1
        if (host, reason) not in self.seen and len(self.seen) < 1024:
            self.seen.add((host, reason))
            log.warn("controller member link from {host} closed: {reason}", host=host, reason=reason)


class LinkHandler(Protocol):
    """What a link tells of its life and frames (``mesh.MemberMesh``)."""

    def link_up(self, link: "MemberLink") -> None: ...

    def frame_received(self, link: "MemberLink", value: Any) -> None: ...

    def link_down(self, link: "MemberLink") -> None: ...


class MemberLink(protocol.Protocol, TimeoutMixin):
    """One authenticated connection to another controller, either end. ``handler`` gets its life and frames:
    ``link_up(link)``, ``frame_received(link, value)``, ``link_down(link)``."""

    def __init__(self, credentials: Credentials, handler: "LinkHandler", refusals: RefusalLog,
                 dialing: Optional[str] = None, reactor: Optional[IReactorTime] = None) -> None:
        self.credentials = credentials
        self.handler = handler
        self.refusals = refusals
        self.dialing = dialing          # the peer id we called, or None when we accepted
        self.peer_id = dialing
        self.peer_key: Optional[bytes] = None            # the public key that proved the peer's id
        self.peer_state: Optional[GroupState] = None
        self.reactor = reactor
        self.up = False
        self._buffer = bytearray()
        self._state = "hello-head" if dialing is None else "challenge-head"
        #: the handshake's transcript, each part set by the step that comes before any read of it (``_head``
        #: too, set by ``_on_head`` only: mesh.py reads its absence as "the peer never answered")
        self._hello = self._challenge = b""
        self._nonce = os.urandom(NONCE_SIZE)
        self._dh: Optional[X25519PrivateKey] = X25519PrivateKey.generate()
        self._secret = credentials.secret
        self._send_key: Optional[bytes] = None
        self._recv_key: Optional[bytes] = None
        self._send_seq = self._recv_seq = 0
        self.paused = False
        self.frames_in = self.frames_out = 0

    def callLater(self, period: float, func: Callable[[], object]) -> IDelayedCall:
        reactor = self.reactor
        if reactor is None:
            from twisted.internet import reactor as installed     # lazy: the global reactor only where none was given
            reactor = installed
        return reactor.callLater(period, func)

    def _wire(self) -> Any:
        """The transport, while a handshake step runs on the connection (Twisted types ``transport`` Optional;
        Any: a TCP transport is an ITransport and an IConsumer, which no one interface joins)."""
        assert self.transport is not None
        return self.transport

    def _dh_public(self) -> bytes:
        assert self._dh is not None         # dropped only once the link is up, when no handshake step runs
        return self._dh.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    # -- handshake ----------------------------------------------------------------------------------
    def connectionMade(self) -> None:
        self.setTimeout(HANDSHAKE_TIMEOUT)
        self._wire().registerProducer(self, True)
        if self.dialing is not None:
            self._hello = (MAGIC + bytes([self.credentials.mode]) + _pad(self.credentials.self_id) + self._nonce
                           + self._dh_public() + self.credentials.state().pack())
            self._wire().write(self._hello)

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        try:
            while self.transport is not None and self._step():
                pass
        except (LinkRefused, CodecError) as e:
            self._refuse(str(e), flush=getattr(e, "flush", False))

    def _step(self) -> bool:
        steps = {"hello-head": (HEAD_SIZE, self._on_head), "hello": (HELLO_SIZE - HEAD_SIZE, self._on_hello),
                 "challenge-head": (HEAD_SIZE, self._on_head),
                 "challenge": (CHALLENGE_SIZE - HEAD_SIZE, self._on_challenge),
                 "proof": (PROOF_SIZE, self._on_proof)}
        if self._state == "frames":
            return self._on_frame()
        if self._state not in steps:
            return False
        size, handler = steps[self._state]
        if len(self._buffer) < size:
            return False
        chunk = bytes(self._buffer[:size])
        del self._buffer[:size]
        handler(chunk)
        return True

    def _on_head(self, head: bytes) -> None:
        if head[:len(PREFIX)] != PREFIX:
            raise LinkRefused("not a controller member (bad magic)")
        if head != MAGIC:
            if self.dialing is None:
                self._wire().write(MAGIC)        # tell the dialer which version we speak, then close
            raise LinkRefused("%s %s" % (self.dialing or "a member", version_refusal(head)), flush=True)
        self._head = head
        self._state = "hello" if self.dialing is None else "challenge"

    def _on_hello(self, rest: bytes) -> None:
        hello = self._head + rest
        mode = hello[HEAD_SIZE]
        at = HEAD_SIZE + 1
        peer = _unpad(hello[at:at + ID_SIZE])
        self._check_mode(mode, peer)
        if peer == self.credentials.self_id or not self.credentials.knows(peer):
            raise LinkRefused("%r is not another member of this controller group's configuration" % peer)
        self.peer_id = peer
        self._hello = hello
        reply = (MAGIC + _pad(self.credentials.self_id) + self._nonce + self._dh_public()
                 + self.credentials.state().pack())
        mac = _mac(self._secret, b"accept", hello, reply)
        signature = self._sign(b"accept", hello, reply, mac)
        self._challenge = reply + mac + signature
        self._wire().write(self._challenge)
        self._state = "proof"

    def _on_challenge(self, rest: bytes) -> None:
        challenge = self._head + rest
        at = HEAD_SIZE
        peer = _unpad(challenge[at:at + ID_SIZE])
        if peer != self.dialing:
            raise LinkRefused("%s answered as %r" % (self.dialing, peer))
        body, mac = challenge[:_CHALLENGE_BODY], challenge[_CHALLENGE_BODY:_CHALLENGE_BODY + MAC_SIZE]
        secret = next((s for s in self.credentials.secrets if hmac.compare_digest(mac, _mac(s, b"accept", self._hello,
                                                                                            body))), None)
        if self.credentials.mode == MODE_OPEN:
            secret = b"" if hmac.compare_digest(mac, _mac(b"", b"accept", self._hello, body)) else None
        if secret is None:
            raise LinkRefused("%s does not hold the group's secret (controllerPeerSecretFile)" % peer)
        self._secret = secret
        telling = self.credentials.is_fenced(peer)
        if not telling:
            self._check_signature(peer, challenge[_CHALLENGE_BODY + MAC_SIZE:], b"accept", self._hello, body, mac)
        self._challenge = challenge
        proof_mac = _mac(secret, b"dial", self._hello, challenge)
        self._wire().write(proof_mac + self._sign(b"dial", self._hello, challenge, proof_mac))
        if telling:
            raise LinkRefused("%s was left behind by this group's forced start: told it (our proof says %s)"
                              % (peer, self.credentials.state().describe()), flush=True)
        self._peer_state(peer, GroupState.unpack(body[-STATE_SIZE:]))
        self._keys(peer_dh=body[HEAD_SIZE + ID_SIZE + NONCE_SIZE:HEAD_SIZE + ID_SIZE + NONCE_SIZE + DH_SIZE],
                   dialer=True)

    def _on_proof(self, proof: bytes) -> None:
        mac = proof[:MAC_SIZE]
        peer = self.peer_id
        assert peer is not None             # the hello named it (``_on_hello``)
        if not hmac.compare_digest(mac, _mac(self._secret, b"dial", self._hello, self._challenge)):
            raise LinkRefused("%s does not hold the group's secret (controllerPeerSecretFile)" % peer)
        self._check_signature(peer, proof[MAC_SIZE:], b"dial", self._hello, self._challenge, mac)
        self._peer_state(peer, GroupState.unpack(self._hello[-STATE_SIZE:]))
        at = HEAD_SIZE + 1 + ID_SIZE + NONCE_SIZE
        self._keys(peer_dh=self._hello[at:at + DH_SIZE], dialer=False)

    def _sign(self, *parts: bytes) -> bytes:
        identity = self.credentials.identity
        if identity is None:
            return _NO_SIGNATURE
        return identity.sign(b"".join(parts))

    def _check_signature(self, peer: str, signature: bytes, *parts: bytes) -> None:
        identity = self.credentials.identity
        if identity is None:
            return
        key = identity.verify(peer, b"".join(parts), signature)
        if key is None:
            raise LinkRefused("the peer could not prove it is %s (its signature does not match any key "
                              "controllerMembersFile lists for %s)" % (peer, peer))
        self.peer_key = key

    def _peer_state(self, peer: str, theirs: GroupState) -> None:
        """Both ends proved who they are: a peer of another group generation is refused, and whichever of
        the two is older learns that it was left behind by a forced new group."""
        ours = self.credentials.state()
        self.peer_state = theirs
        if ours.same_group(theirs):
            return
        if theirs.epoch > ours.epoch:
            self.credentials.fenced(peer, theirs)
            raise LinkRefused("%s belongs to a newer controller group (%s; this member: %s): this member was "
                              "fenced" % (peer, theirs.describe(), ours.describe()), flush=True)
        raise LinkRefused("%s belongs to an older or another controller group (%s; this group: %s): refused, "
                          "it was fenced" % (peer, theirs.describe(), ours.describe()), flush=True)

    def _check_mode(self, mode: int, peer: str) -> None:
        if mode not in (MODE_SECRET, MODE_OPEN):
            raise LinkRefused("unknown authentication mode %d" % mode)
        if mode != self.credentials.mode:
            ours = "a secret" if self.credentials.mode == MODE_SECRET else "no authentication"
            raise LinkRefused("%r does not use the same member authentication (this member uses %s)" % (peer, ours))

    def _keys(self, peer_dh: bytes, dialer: bool) -> None:
        assert self._dh is not None         # the handshake's last step: the key is dropped just below
        try:
            shared = self._dh.exchange(X25519PublicKey.from_public_bytes(peer_dh))
        except ValueError as e:
            raise LinkRefused("a bad key exchange from %s: %s" % (self.peer_id, e))
        transcript = hashlib.sha256(self._hello + self._challenge).digest()
        session = _mac(self._secret, b"session", shared, transcript)
        to_acceptor, to_dialer = _mac(session, b"to-acceptor"), _mac(session, b"to-dialer")
        self._send_key, self._recv_key = (to_acceptor, to_dialer) if dialer else (to_dialer, to_acceptor)
        self._dh = None
        self._state = "frames"
        self.setTimeout(None)
        self.up = True
        self.handler.link_up(self)

    # -- frames ----------------------------------------------------------------------------------------
    def _on_frame(self) -> bool:
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
        assert self._recv_key is not None   # frames are read only once the link is up (``_keys``)
        if not hmac.compare_digest(mac, _mac(self._recv_key, _SEQ.pack(self._recv_seq), payload)):
            raise LinkRefused("a frame from %s failed its MAC (tampered, replayed or out of order)" % self.peer_id)
        self._recv_seq += 1
        self.frames_in += 1
        self.handler.frame_received(self, unpack(payload))
        return True

    def send(self, value: Any, force: bool = False) -> bool:
        """Send one value (msgpack); False when the link is not up or the peer is not reading (dropped:
        Raft resends what matters), unless ``force`` (a snapshot chunk: bounded, and costly to lose)."""
        if not self.up or self.transport is None or (self.paused and not force):
            return False
        payload = pack(value)
        assert self._send_key is not None   # the link is up (``_keys``)
        mac = _mac(self._send_key, _SEQ.pack(self._send_seq), payload)
        self._send_seq += 1
        self.frames_out += 1
        self.transport.write(_FRAME_HEAD.pack(len(payload)) + mac + payload)
        return True

    # -- IPushProducer: Twisted says when the peer stops reading -------------------------------------------
    def pauseProducing(self) -> None:
        self.paused = True

    def resumeProducing(self) -> None:
        self.paused = False

    def stopProducing(self) -> None:
        self.paused = True

    # -- the end ---------------------------------------------------------------------------------------
    def _refuse(self, reason: str, flush: bool = False) -> None:
        peer = self.transport.getPeer() if self.transport is not None else None
        self.refusals.refused(getattr(peer, "host", "?"), reason)
        self._state = "closed"
        if flush and self.transport is not None:
            self.transport.loseConnection()
        else:
            self.close()

    def close(self) -> None:
        if self.transport is not None:
            abort = getattr(self.transport, "abortConnection", None) or self.transport.loseConnection
            abort()

    def timeoutConnection(self) -> None:
        self._refuse("no handshake within %.0f s" % HANDSHAKE_TIMEOUT)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.setTimeout(None)
        was_up, self.up = self.up, False
        self._state = "closed"
        if was_up:
            self.handler.link_down(self)
