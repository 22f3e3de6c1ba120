"""Every controller linked to every other: one authenticated connection per pair, kept alive.

Of two members, the one with the smaller id dials and the other accepts (on its controller port,
through ``members.MemberSniffingFactory``), so a pair never holds two connections at once. A link
that drops is dialled again after a short, growing, jittered pause. Each side sends a ping when it
has sent nothing for ``ping_interval`` and closes a link it has heard nothing on for
``idle_timeout``: a peer behind a partition that drops packets (no RST, no FIN) is noticed in
seconds, not after TCP's retries. A newer link from a peer replaces the older one (it restarted).

The peers change with the group's configuration (``set_peers``): a member added is dialled, a
member removed has its link closed and is refused from then on. Every second the member keys are
read again if their files changed (``identity.py``), and a link whose peer's key is no longer
listed is closed.

The mesh knows nothing of Raft: ``receiver`` gets ``peer_connected(id)``, ``peer_disconnected(id)``
and ``value_received(id, value)``. The simulated cluster in the tests offers the same interface.
"""

import random

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from twisted.internet import protocol, task
from twisted.internet.interfaces import IAddress, IConnector, IDelayedCall
from twisted.logger import Logger

from namesrv.controller.replication.fencing import FENCE_DIAL_SECONDS
from namesrv.controller.replication.identity import IdentityError
from namesrv.controller.replication.members import Credentials, MemberLink, RefusalLog

if TYPE_CHECKING:   # types only
    from twisted.python.failure import Failure

    from namesrv.controller.replication.transport import MemberTransport

#: a member's address: (host, port)
Address = tuple[str, int]

PING = ["ping"]


class _Dial(protocol.ClientFactory):
    noisy = False

    def __init__(self, mesh: "MemberMesh", peer: str) -> None:
        self.mesh = mesh
        self.peer = peer

    def buildProtocol(self, addr: Optional[IAddress]) -> MemberLink:
        self.link = MemberLink(self.mesh.credentials, self.mesh, self.mesh.refusals, dialing=self.peer,
                               reactor=self.mesh.reactor)
        return self.link

    def clientConnectionFailed(self, connector: IConnector, reason: "Failure") -> None:
        self.mesh._dial_failed(self.peer, reason)

    def clientConnectionLost(self, connector: IConnector, reason: "Failure") -> None:
        self.mesh._dial_ended(self.peer, connector, getattr(self, "link", None))


class MemberMesh:
    log = Logger()

    def __init__(self, credentials: Credentials, addresses: Mapping[str, Address], reactor: Any,
                 monotonic: Callable[[], float], ping_interval: float = 0.2, idle_timeout: float = 2.0,
                 redial: tuple[float, float] = (0.1, 1.0), bind_host: Optional[str] = None) -> None:
        # ``reactor``: Any, as it is the reactor's time (callLater) and its TCP (connectTCP), which no one
        # Twisted interface joins
        self.credentials = credentials
        self.addresses: dict[str, Address] = dict(addresses)
        self.reactor = reactor
        self.monotonic = monotonic
        self.ping_interval = ping_interval
        self.idle_timeout = idle_timeout
        self.redial = redial
        self.bind_host = bind_host
        self.refusals = RefusalLog()
        self.receiver: Optional["MemberTransport"] = None
        self.links: dict[str, MemberLink] = {}      # peer id -> MemberLink (up)
        self._last_in: dict[str, float] = {}
        self._last_out: dict[str, float] = {}
        self._pause: dict[str, float] = {}
        self._dialing: dict[str, Union[IConnector, IDelayedCall]] = {}   # a dial under way, or one to come
        self._running = False
        self._keepalive: Optional[task.LoopingCall] = None
        self._next_refresh = 0.0
        self._silent_closes: set[str] = set()
        #: peer id -> (host, port): told, by a dial now and then, it was fenced
        self.fenced: dict[str, Address] = {}
        self._next_fence_dial = 0.0
        self.dials = 0

    def dials_to(self, peer: str) -> bool:
        return self.credentials.self_id < peer and peer in self.addresses

    def member_hosts(self) -> set[str]:
        """The hosts of the configured members (their handshakes get a place when many are under way)."""
        return {host for host, _ in self.addresses.values()}

    def set_peers(self, addresses: Mapping[str, Address]) -> None:
        """The group's configuration changed: dial members added, close the links of members removed."""
        others = dict(addresses)
        others.pop(self.credentials.self_id, None)
        old, self.addresses = self.addresses, others
        for peer in set(old) - set(others):
            self._forget(peer)
        for peer, address in others.items():
            if old.get(peer) != address and peer in old:
                self._forget(peer)
            if self._running and self.dials_to(peer) and peer not in self.links and peer not in self._dialing:
                self._dial(peer)

    def set_fenced(self, addresses: Mapping[str, Address]) -> None:
        self.fenced = dict(addresses)

    def _tell_fenced(self, now: float) -> None:
        if not self.fenced or now < self._next_fence_dial:
            return
        self._next_fence_dial = now + FENCE_DIAL_SECONDS
        for peer in sorted(self.fenced):
            if peer not in self._dialing and peer not in self.addresses:
                host, port = self.fenced[peer]
                self._dialing[peer] = self.reactor.connectTCP(host, port, _Dial(self, peer),
                                                              timeout=max(1, int(self.idle_timeout)))

    def _forget(self, peer: str) -> None:
        pending = self._dialing.pop(peer, None)
        if pending is not None:
            if hasattr(pending, "cancel") and getattr(pending, "active", lambda: False)():   # as stop() tells them
                pending.cancel()
            elif hasattr(pending, "disconnect"):
                pending.disconnect()
        link = self.links.get(peer)
        if link is not None:
            link.close()

    # -- life -------------------------------------------------------------------------------------------
    def start(self, receiver: "MemberTransport") -> None:
        self.receiver = receiver
        self._running = True
        for peer in sorted(self.addresses):
            if self.dials_to(peer):
                self._dial(peer)
        self._keepalive = task.LoopingCall(self._check)
        self._keepalive.clock = self.reactor
        self._keepalive.start(self.ping_interval / 2, now=False)

    def stop(self) -> None:
        self._running = False
        if self._keepalive is not None and self._keepalive.running:
            self._keepalive.stop()
        for pending in list(self._dialing.values()):
            if hasattr(pending, "cancel") and getattr(pending, "active", lambda: False)():
                pending.cancel()
            elif hasattr(pending, "disconnect"):
                pending.disconnect()
        self._dialing.clear()
        for link in list(self.links.values()):
            link.close()

    def accept(self) -> Optional[MemberLink]:
        """A member link for a connection the controller port accepted (``MemberSniffer``)."""
        if not self._running:
            return None
        return MemberLink(self.credentials, self, self.refusals, dialing=None, reactor=self.reactor)

    # -- dialling ---------------------------------------------------------------------------------------
    def _dial(self, peer: str) -> None:
        if not self._running or peer in self.links:
            return
        host, port = self.addresses[peer]
        self.dials += 1
        kwargs: dict[str, object] = {"timeout": max(1, int(self.idle_timeout))}
        if self.bind_host:
            kwargs["bindAddress"] = (self.bind_host, 0)
        self._dialing[peer] = self.reactor.connectTCP(host, port, _Dial(self, peer), **kwargs)

    def _redial_later(self, peer: str) -> None:
        if not self._running or not self.dials_to(peer):
            return
        pause = self._pause.get(peer, self.redial[0])
        self._pause[peer] = min(self.redial[1], pause * 2)
        self._dialing[peer] = self.reactor.callLater(pause * (0.5 + random.random() / 2), self._dial, peer)

    def _dial_failed(self, peer: str, reason: "Failure") -> None:
        self._dialing.pop(peer, None)
        self._redial_later(peer)

    def _dial_ended(self, peer: str, connector: IConnector, link: Optional[MemberLink] = None) -> None:
        """A dialled connection closed. One that never became the peer's link (closed during the
        handshake, or accepted by a proxy in the path that then could not reach the peer, which was
        not listening yet) has no ``link_down`` to dial again: dial here, or the pair never links."""
        if link is not None and link.peer_key is None and link.frames_in == 0 and getattr(link, "_head", None) is None \
                and peer not in self._silent_closes and len(self._silent_closes) < 1024:
            self._silent_closes.add(peer)
            self.log.warn("controller {me}: {peer} closed the member link before answering the handshake (it "
                          "refuses this member's secret or key, or speaks an older member-link version; its log says "
                          "which)", me=self.credentials.self_id, peer=peer)
        if self._dialing.get(peer) is connector:
            del self._dialing[peer]
            if peer not in self.links:
                self._redial_later(peer)

    # -- the links' life (MemberLink's handler) ----------------------------------------------------------
    def _peer_of(self, link: MemberLink) -> str:
        """The id of a link's peer: known once its handshake named it, before the link is up or reads a frame."""
        assert link.peer_id is not None
        return link.peer_id

    def _receiver(self) -> "MemberTransport":
        assert self.receiver is not None    # given by start(), before any link is up
        return self.receiver

    def link_up(self, link: MemberLink) -> None:
        peer = self._peer_of(link)
        old = self.links.get(peer)
        self.links[peer] = link
        self._dialing.pop(peer, None)
        self._pause.pop(peer, None)
        now = self.monotonic()
        self._last_in[peer] = self._last_out[peer] = now
        if old is not None and old is not link:
            old.close()
        else:
            self.log.info("controller {me}: linked with {peer}", me=self.credentials.self_id, peer=peer)
            self._receiver().peer_connected(peer)

    def link_down(self, link: MemberLink) -> None:
        peer = self._peer_of(link)
        if self.links.get(peer) is not link:
            return
        del self.links[peer]
        self.log.info("controller {me}: link with {peer} closed", me=self.credentials.self_id, peer=peer)
        self._receiver().peer_disconnected(peer)
        if self.dials_to(peer):
            self._redial_later(peer)

    def frame_received(self, link: MemberLink, value: Any) -> None:
        peer = self._peer_of(link)
        if self.links.get(peer) is not link:
            link.close()
            return
        self._last_in[peer] = self.monotonic()
        if value == PING:
            return
        self._receiver().value_received(peer, value)

    # -- sending ----------------------------------------------------------------------------------------
    def send(self, peer: str, value: Any, force: bool = False) -> bool:
        link = self.links.get(peer)
        if link is None:
            return False
        sent = link.send(value, force=force)
        if sent:
            self._last_out[peer] = self.monotonic()
        return sent

    def connected(self, peer: str) -> bool:
        return peer in self.links

    def drop(self, peer: str) -> None:
        """Close the link with ``peer`` (it sent something we refuse); it is dialled again as usual."""
        link = self.links.get(peer)
        if link is not None:
            link.close()

    def _refresh_keys(self, now: float) -> None:
        """Once a second: read the key files again if they changed; close the links of peers whose key or
        membership is gone."""
        if now < self._next_refresh:
            return
        self._next_refresh = now + 1.0
        identity = self.credentials.identity
        if identity is not None:
            try:
                identity.refresh()
            except IdentityError as e:
                self.log.error("controller {me}: {err} (the keys read before are kept)", me=self.credentials.self_id,
                               err=e)
        for peer, link in list(self.links.items()):
            revoked = identity is not None and link.peer_key is not None and not identity.accepts(peer, link.peer_key)
            if revoked or not self.credentials.knows(peer):
                self.log.warn("controller {me}: link with {peer} closed: {why}", me=self.credentials.self_id,
                              peer=peer, why="its key is no longer in controllerMembersFile" if revoked
                              else "it is no longer a member of the group's configuration")
                link.close()

    def _check(self) -> None:
        now = self.monotonic()
        self._refresh_keys(now)
        self._tell_fenced(now)
        for peer, link in list(self.links.items()):
            if now - self._last_in.get(peer, now) > self.idle_timeout:
                self.log.warn("controller {me}: nothing from {peer} for {s:.1f} s: link closed",
                              me=self.credentials.self_id, peer=peer, s=now - self._last_in[peer])
                link.close()
            elif now - self._last_out.get(peer, 0) >= self.ping_interval:
                self.send(peer, PING)
