"""Every controller linked to every other: one authenticated connection per pair, kept alive.

Of two members, the one with the smaller id dials and the other accepts (on its controller port,
through ``members.MemberSniffingFactory``), so a pair never holds two connections at once. A link
that drops is dialled again after a short, growing, jittered pause. Each side sends a ping when it
has sent nothing for ``ping_interval`` and closes a link it has heard nothing on for
``idle_timeout``: a peer behind a partition that drops packets (no RST, no FIN) is noticed in
seconds, not after TCP's retries. A newer link from a peer replaces the older one (it restarted).

The mesh knows nothing of Raft: ``receiver`` gets ``peer_connected(id)``, ``peer_disconnected(id)``
and ``value_received(id, value)``. The simulated cluster in the tests offers the same interface.
"""

import random

from twisted.internet import protocol, task
from twisted.logger import Logger

from namesrv.controller.replication.members import MemberLink, RefusalLog

PING = ["ping"]


class _Dial(protocol.ClientFactory):
    noisy = False

    def __init__(self, mesh, peer):
        self.mesh = mesh
        self.peer = peer

    def buildProtocol(self, addr):
        return MemberLink(self.mesh.credentials, self.mesh, self.mesh.refusals, dialing=self.peer,
                          reactor=self.mesh.reactor)

    def clientConnectionFailed(self, connector, reason):
        self.mesh._dial_failed(self.peer, reason)

    def clientConnectionLost(self, connector, reason):
        pass


class MemberMesh:
    log = Logger()

    def __init__(self, credentials, addresses, reactor, monotonic, ping_interval=0.2, idle_timeout=2.0,
                 redial=(0.1, 1.0), bind_host=None):
        self.credentials = credentials
        self.addresses = dict(addresses)        # peer id -> (host, port)
        self.reactor = reactor
        self.monotonic = monotonic
        self.ping_interval = ping_interval
        self.idle_timeout = idle_timeout
        self.redial = redial
        self.bind_host = bind_host
        self.refusals = RefusalLog()
        self.receiver = None
        self.links = {}                          # peer id -> MemberLink (up)
        self._last_in = {}
        self._last_out = {}
        self._pause = {}
        self._dialing = {}                       # peer id -> IConnector or DelayedCall
        self._running = False
        self._keepalive = None
        self.dials = 0

    def dials_to(self, peer):
        return self.credentials.self_id < peer

    # -- life -------------------------------------------------------------------------------------------
    def start(self, receiver):
        self.receiver = receiver
        self._running = True
        for peer in sorted(self.addresses):
            if self.dials_to(peer):
                self._dial(peer)
        self._keepalive = task.LoopingCall(self._check)
        self._keepalive.clock = self.reactor
        self._keepalive.start(self.ping_interval / 2, now=False)

    def stop(self):
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

    def accept(self):
        """A member link for a connection the controller port accepted (``MemberSniffer``)."""
        if not self._running:
            return None
        return MemberLink(self.credentials, self, self.refusals, dialing=None, reactor=self.reactor)

    # -- dialling ---------------------------------------------------------------------------------------
    def _dial(self, peer):
        if not self._running or peer in self.links:
            return
        host, port = self.addresses[peer]
        self.dials += 1
        kwargs = {"timeout": max(1, int(self.idle_timeout))}
        if self.bind_host:
            kwargs["bindAddress"] = (self.bind_host, 0)
        self._dialing[peer] = self.reactor.connectTCP(host, port, _Dial(self, peer), **kwargs)

    def _redial_later(self, peer):
        if not self._running or not self.dials_to(peer):
            return
        pause = self._pause.get(peer, self.redial[0])
        self._pause[peer] = min(self.redial[1], pause * 2)
        self._dialing[peer] = self.reactor.callLater(pause * (0.5 + random.random() / 2), self._dial, peer)

    def _dial_failed(self, peer, reason):
        self._dialing.pop(peer, None)
        self._redial_later(peer)

    # -- the links' life (MemberLink's handler) ----------------------------------------------------------
    def link_up(self, link):
        peer = link.peer_id
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
            self.receiver.peer_connected(peer)

    def link_down(self, link):
        peer = link.peer_id
        if self.links.get(peer) is not link:
            return
        del self.links[peer]
        self.log.info("controller {me}: link with {peer} closed", me=self.credentials.self_id, peer=peer)
        self.receiver.peer_disconnected(peer)
        if self.dials_to(peer):
            self._redial_later(peer)

    def frame_received(self, link, value):
        peer = link.peer_id
        if self.links.get(peer) is not link:
            link.close()
            return
        self._last_in[peer] = self.monotonic()
        if value == PING:
            return
        self.receiver.value_received(peer, value)

    # -- sending ----------------------------------------------------------------------------------------
    def send(self, peer, value):
        link = self.links.get(peer)
        if link is None:
            return False
        sent = link.send(value)
        if sent:
            self._last_out[peer] = self.monotonic()
        return sent

    def connected(self, peer):
        return peer in self.links

    def drop(self, peer):
        """Close the link with ``peer`` (it sent something we refuse); it is dialled again as usual."""
        link = self.links.get(peer)
        if link is not None:
            link.close()

    def _check(self):
        now = self.monotonic()
        for peer, link in list(self.links.items()):
            if now - self._last_in.get(peer, now) > self.idle_timeout:
                self.log.warn("controller {me}: nothing from {peer} for {s:.1f} s: link closed",
                              me=self.credentials.self_id, peer=peer, s=now - self._last_in[peer])
                link.close()
            elif now - self._last_out.get(peer, 0) >= self.ping_interval:
                self.send(peer, PING)
