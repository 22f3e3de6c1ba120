"""Probes every listed name server with a real remoting request and tells the model what it heard.

A listening port proves little: a hung process (a stopped JVM, a stuck reactor) still accepts
connections. So each probe is one real request, answered within ``timeout``, on a connection kept
per listed server (namesrv/addressing/connections.py: a new connection per probe was a connection
close in every probed server's log every 2 s). Any answer counts (NO_PERMISSION
from a server with ACL on still proves it serves). The request is GET_NAMESRV_CONFIG: every
NameServer (Java 4.9, 5.x, ours) answers it from a few dozen properties, where
GET_BROKER_CLUSTER_INFO's answer grows with the fleet and this runs every few seconds for every
listed server.

At most one probe per name server is in flight; a probe still running when the next round
comes is not doubled (its timeout ends it). Each change of the served list is logged and
passed to ``listeners`` (the metrics), as ``listener(address, change, liveness)``; each probe's
outcome to ``probed`` listeners, as ``listener(address, answered)``.
"""

from twisted.application import service
from twisted.internet import task
from twisted.logger import Logger

from namesrv.addressing.connections import ProbeConnections
from namesrv.addressing.liveness import REMOVED
from namesrv.protocol.codes import RequestCode

log = Logger()

PROBE_CODE = RequestCode.GET_NAMESRV_CONFIG


class AddressProber(service.Service):
    """Every ``interval`` seconds, one probe of each listed name server not already being probed."""

    name = "address service"

    def __init__(self, liveness, reactor, clock, interval, timeout, probe=None):
        self.liveness = liveness
        self.reactor = reactor
        self.clock = clock
        self.interval = interval
        self.timeout = timeout
        self.connections = None
        if probe is None:
            self.connections = ProbeConnections()
            probe = self.connections.probe
        self.probe = probe
        self.listeners = []
        self.probed = []
        self.in_flight = set()
        self.call = None
        self._fallback = False

    def startService(self):
        service.Service.startService(self)
        self.liveness.restart(self.clock.seconds())
        log.info("address service lists {addresses}; a name server silent for {down}s leaves it",
                 addresses=self.liveness.text, down=self.liveness.down_after)
        self.call = task.LoopingCall(self.probe_all)
        self.call.clock = self.reactor
        self.call.start(self.interval, now=True).addErrback(
            lambda failure: log.failure("address service probes stopped", failure))

    def stopService(self):
        service.Service.stopService(self)
        if self.call is not None and self.call.running:
            self.call.stop()
        self.call = None
        if self.connections is not None:
            self.connections.close_all()

    def probe_all(self):
        if self.connections is not None:   # a server no longer listed (UPDATE_NAMESRV_CONFIG) is not probed
            listed = {(host, int(port)) for host, _, port in (a.rpartition(":") for a in self.liveness.addresses)}
            for key in [key for key in self.connections.connections if key not in listed]:
                self.connections.drop(key)
        for address in self.liveness.addresses:
            if address in self.in_flight:
                continue
            self.in_flight.add(address)
            host, _, port = address.rpartition(":")
            d = self.probe(self.reactor, host, int(port), timeout=self.timeout, code=PROBE_CODE)
            d.addCallbacks(self._answered, self._failed, callbackArgs=(address,), errbackArgs=(address,))
            d.addBoth(self._done, address)

    def _answered(self, millis, address):
        self._tell(self.probed, address, True)
        self._changed(address, self.liveness.answered(address, self.clock.seconds()))

    def _failed(self, failure, address):
        self._tell(self.probed, address, False)
        reason = failure.getErrorMessage() or failure.type.__name__
        self._changed(address, self.liveness.failed(address, self.clock.seconds(), reason))

    def _done(self, ignored, address):
        self.in_flight.discard(address)

    def _changed(self, address, change):
        if change is None:
            return
        liveness = self.liveness
        state = liveness.states[address]
        if change == REMOVED:
            log.warn("name server {address} left the address list: no answer for {seconds:.1f}s ({reason}); "
                     "serving {served}", address=address, reason=state.last_failure, served=liveness.text,
                     seconds=liveness.silent_for(address, self.clock.seconds()))
        else:
            log.info("name server {address} is back in the address list after {answers} answers in a row; "
                     "serving {served}", address=address, answers=state.answers_in_row, served=liveness.text)
        if liveness.fallback != self._fallback:
            self._fallback = liveness.fallback
            if liveness.fallback:
                log.warn("no listed name server answers: the address service serves the whole list {served}",
                         served=liveness.text)
        self._tell(self.listeners, address, change, liveness)

    @staticmethod
    def _tell(listeners, *args):
        for listener in listeners:
            try:
                listener(*args)
            except Exception:
                log.failure("address service listener {listener} failed", listener=listener)
