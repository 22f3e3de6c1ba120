"""Small stand-ins shared by the security tests: processors, connections, a service shell."""

import types

from twisted.internet import defer
from zope.interface import implementer

from namesrv.interfaces import IRequestProcessor
from namesrv.protocol.codes import RequestCode, request_name
from namesrv.dispatch.chain import namesrv_chain
from namesrv.observe.metrics import metrics_port_service
from namesrv.security.wiring import AclFile, GuardListeners, TlsListening
from namesrv.server.factory import RemotingServerFactory
from namesrv.timing.scheduler import TurnScheduler
from tests.config_for import make_config
from tests.fakes import RecordingEventLog


@implementer(IRequestProcessor)
class Echo:
    """Answers every declared code with SUCCESS and remark = the code's name; ``hold`` makes answers Deferred."""

    def __init__(self, codes=None, name="echo"):
        self.name = name
        self.codes = frozenset(codes if codes is not None else (int(c) for c in RequestCode))
        self.seen = []
        self.hold = False
        self.held = []

    def reject_request(self, request):
        return None

    def process_request(self, request, connection):
        self.seen.append(request.code)
        answer = request.make_response(0, request_name(request.code))
        if self.hold:
            d = defer.Deferred()
            self.held.append((d, answer))
            return d
        return answer

    def release_all(self):
        held, self.held = self.held, []
        for d, answer in held:
            d.callback(answer)


class Housekeeping:
    def __init__(self):
        self.closed = []

    def connection_closed(self, connection):
        self.closed.append(connection)


class Routes:
    def __init__(self):
        self.topic_queue_table = {"t1": [], "t2": []}
        self.broker_live_table = {("c", "1.1.1.1:10911"): object()}
        self.cluster_addr_table = {"c": {"b"}}


def service(reactor, processor=None, **values):
    """A NameServer's guarded request path, as ``make_service`` builds it, around one processor:
    the guards, the factory dispatching through them, TLS and metrics when configured."""
    events = RecordingEventLog()
    cfg = make_config(**values)
    processor = processor or Echo()
    acl, listeners = AclFile.for_config(cfg, reactor), GuardListeners()
    chain = namesrv_chain([processor], cfg, TurnScheduler.for_config(cfg, reactor), events, reactor,
                          acl_store=acl.store if acl is not None else None, listeners=[listeners])
    factory = RemotingServerFactory(chain.entry, cfg, Housekeeping(), events, reactor)
    tls = TlsListening.for_config(cfg, factory, reactor)
    routes = Routes()
    metrics = None
    if cfg.prometheusListenPort:
        metrics = metrics_port_service(cfg, chain, listeners, acl, tls, routes, factory, events, reactor)
    return types.SimpleNamespace(config=cfg, reactor=reactor, registry=chain.registry, factory=factory, chain=chain,
                                 acl=acl, listeners=listeners, tls=tls, metrics=metrics, events=events, routes=routes,
                                 processor=processor, listen_factory=tls.factory if tls is not None else factory)
