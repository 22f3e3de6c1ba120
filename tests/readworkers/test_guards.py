"""TLS and ACL in a read worker: the flags, the worker's own checks, and the counts sent up."""

import os
import types

import pytest
from twisted.internet import protocol, task
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import ISSLTransport
from twisted.internet.testing import StringTransport
from zope.interface import alsoProvides, implementer

from namesrv.config import NamesrvConfig
from namesrv.dispatch.classes import RequestClassifier
from namesrv.dispatch.observers import RequestObservers
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.interfaces import IRequestPolicy
from namesrv.observe.metrics import NamesrvMetrics
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.readworkers.channel.feed import MessageReader, counts_message
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.main.processes import ReadWorkerPool
from namesrv.readworkers.main.publisher import TopicTracker, local_codes
from namesrv.readworkers.worker.connections import WorkerConnection
from namesrv.readworkers.worker.entry import parse_args
from namesrv.readworkers.worker.guards import RejectionCounts, WorkerAcl, WorkerGuards, worker_arguments
from namesrv.readworkers.worker.replica import Replica
from namesrv.security.signature import sign_request_ext
from namesrv.server import tlsmode
from namesrv.service import make_service
from processors.route import RouteProcessor
from tests import proxyheaders
from tests.brokers import register_request, route_request
from tests.config_for import service_config as make_config
from tests.fakes import written_frames, FakeConnection, RecordingEventLog, turn_scheduler, Reactor
from tests.readworkers.harness import Factory, connect, Harness
from tests.readworkers.pools import pool_for
from tests.security.certs import write_pair


ACL = """
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
"""
BASE_ARGS = ["--index", "0", "--port", "1", "--upstream", "u.sock", "--generation", "g"]


def config(**values):
    cfg = NamesrvConfig()
    cfg.update(values)
    return cfg


def test_nothing_to_pass_when_tls_and_acl_are_off():
    assert worker_arguments(config()) == []
    options = parse_args(BASE_ARGS)
    assert WorkerAcl.for_options(options, task.Clock()) is None
    guards = WorkerGuards(options, task.Clock(), RejectionCounts())
    wrapped = protocol.Factory()
    assert guards.listen_factory(wrapped, config()) is wrapped and list(guards) == []


def test_paths_travel_absolute_and_the_worker_loads_the_same_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cert, key, _ = write_pair(tmp_path, password="s3cret")
    ca, _, _ = write_pair(tmp_path, name="ca")
    (tmp_path / "key.pass").write_text("s3cret\n")
    (tmp_path / "acl.yml").write_text(ACL)
    cfg = config(tlsMode="Enforcing", tlsServerCertPath=os.path.basename(cert), tlsServerKeyPath=key,
                 tlsServerKeyPasswordFile="key.pass", tlsServerNeedClientAuth="require", tlsServerTrustCertPath=ca,
                 aclEnable="true", aclFile="acl.yml", fileWatchIntervalMillis="200")
    args = worker_arguments(cfg)
    options = parse_args(BASE_ARGS + args)
    assert options.tls_mode == "enforcing" and options.tls_cert == cert and options.tls_key == key
    assert options.tls_key_password_file == str(tmp_path / "key.pass") and options.tls_trust == ca
    assert options.tls_client_auth == "require" and not options.tls_test_mode
    assert options.acl_file == str(tmp_path / "acl.yml") and options.file_watch_interval == 200
    guards = WorkerGuards(options, task.Clock(), RejectionCounts(), WorkerAcl.for_options(options, task.Clock()))
    assert guards.material.options is not None and guards.material.client_auth == "require"
    assert len(guards.acl_store.table.accounts) == 1
    watched = [w.paths for w in guards if hasattr(w, "paths")] + [w.paths for w in guards.acl]
    assert sorted(watched) == sorted([[cert, key, ca, str(tmp_path / "key.pass")], [str(tmp_path / "acl.yml")]])
    assert isinstance(guards.listen_factory(protocol.Factory(), config()), tlsmode.TlsSniffingFactory)


def test_a_worker_never_serves_unguarded(tmp_path):
    with pytest.raises(ValueError):   # no certificate: the worker exits (and is started again later)
        WorkerGuards(parse_args(BASE_ARGS + ["--tls-mode", "permissive"]), task.Clock(), RejectionCounts())


def test_an_unreadable_acl_file_sends_everything_to_the_main_process_until_it_reads(tmp_path):
    acl = tmp_path / "acl.yml"
    clock = task.Clock()
    worker_acl = WorkerAcl.for_options(parse_args(BASE_ARGS + ["--acl-file", str(acl)]), clock)
    assert worker_acl.unreadable
    harness = Harness(tmp_path, acl=worker_acl)
    answer = harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    harness.publish()
    guards = WorkerGuards(parse_args(BASE_ARGS), clock, RejectionCounts(), worker_acl)
    factory = Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock())
    proto, transport = connect(factory)
    frame = encode_frame(signed_route("T1"))
    proto.dataReceived(frame)
    assert factory.upstream.frames == [frame[4:]] and transport.value() == b""
    guards.startService()
    try:
        acl.write_text(ACL)
        clock.advance(0.5)
        proto.dataReceived(frame)
        assert [decode_frame(f[4:]).code for f in written_frames(transport)] == [ResponseCode.SUCCESS]
        assert factory.upstream.frames == [frame[4:]]
    finally:
        guards.stopService()


class AclHarness(Harness):
    """Harness with ACL on in the main process and the worker's guards on the replica."""

    def __init__(self, tmp_path, signed="routeRead,adminWrite"):
        acl = tmp_path / "acl.yml"
        acl.write_text(ACL)
        self.acl = acl
        main_config = make_config(tmp_path, aclEnable="true", aclFile=str(acl), aclSignedClasses=signed)
        self.service = make_service(main_config, clock=task.Clock(), reactor=Reactor())
        self.shared = SharedGeneration(str(tmp_path / "generation"), writable=True)
        self.tracker = self.service.routes.track_topic_changes(TopicTracker())
        self.service.routes.add_change_listener(self.changed)
        self.service.kv.change_listeners.append(self.changed)
        self.service.config.add_listener(self.changed)
        self.clock = task.Clock()
        options = parse_args(BASE_ARGS + worker_arguments(main_config))
        rejections = RejectionCounts()
        worker_acl = WorkerAcl.for_options(options, self.clock)
        self.replica = Replica(SharedGeneration(str(tmp_path / "generation")), Reactor(), acl=worker_acl,
                               rejections=rejections)
        self.guards = WorkerGuards(options, self.clock, rejections, worker_acl)
        self.sizes = []
        self.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
        self.publish()


def signed_route(topic, secret="12345678", access_key="rocketmq2", opaque=1):
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, sign_request_ext({"topic": topic}, None, access_key,
                                                                             secret), opaque=opaque)


def test_signed_reads_are_answered_by_the_worker_exactly_as_by_the_main_process(tmp_path):
    harness = AclHarness(tmp_path)
    requests = [signed_route("T1", opaque=1), signed_route("T1", secret="wrongwrong", opaque=2),
                route_request("T1", opaque=3), signed_route("T1", access_key="nobody99", opaque=4),
                make_request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=5)]
    factory = Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock())
    proto, transport = connect(factory)
    proto.dataReceived(b"".join(encode_frame(r) for r in requests))
    ours = written_frames(transport)
    assert not hasattr(factory, "upstream")   # nothing forwarded: all five answered by the worker
    assert ours == [encode_frame(harness.main(r)) for r in requests]
    codes = [ResponseCode.SUCCESS, ResponseCode.NO_PERMISSION, ResponseCode.NO_PERMISSION,
             ResponseCode.NO_PERMISSION, ResponseCode.SUCCESS]
    assert [harness.main(r).code for r in requests] == codes
    assert harness.guards.rejections.take() == {("route_read", "acl_bad_signature"): 1,
                                                 ("route_read", "acl_unsigned"): 1,
                                                 ("route_read", "acl_unknown_account"): 1}


def test_the_workers_signed_classes_follow_the_replicas_configuration(tmp_path):
    harness = AclHarness(tmp_path, signed="adminWrite")
    assert harness.replica.registry.dispatch(route_request("T1"), FakeConnection("127.0.0.1:40000")).code == ResponseCode.SUCCESS
    harness.service.config.update({"aclSignedClasses": "routeRead"})
    harness.publish()
    assert harness.replica.registry.dispatch(route_request("T1"), FakeConnection("127.0.0.1:40000")).code == ResponseCode.NO_PERMISSION


def test_the_worker_reloads_a_changed_acl_file(tmp_path):
    harness = AclHarness(tmp_path)
    harness.guards.startService()
    try:
        newcomer = signed_route("T1", access_key="newcomer1", secret="abcdefgh")
        assert harness.replica.registry.dispatch(newcomer, FakeConnection("127.0.0.1:40000")).code == ResponseCode.NO_PERMISSION
        harness.acl.write_text(ACL + "  - accessKey: newcomer1\n    secretKey: abcdefgh\n")
        harness.clock.advance(0.5)
        assert harness.guards.acl_store.reloads == 1
        assert harness.replica.registry.dispatch(newcomer, FakeConnection("127.0.0.1:40000")).code == ResponseCode.SUCCESS
    finally:
        harness.guards.stopService()


class RecordingConnection(WorkerConnection):
    def hand_off(self):
        self.factory.handed.append(self)
        self.moved()


class HandoffFactory(Factory):
    protocol_class = RecordingConnection
    handed = None


class SocketLikeTransport(StringTransport):
    def fileno(self):
        return -1

    def stopReading(self):
        pass


@pytest.mark.parametrize("tls", [False, True])
def test_a_tls_brokers_connection_is_relayed_not_handed_over(tmp_path, tls):
    harness = Harness(tmp_path)
    factory = HandoffFactory(harness.replica, str(tmp_path / "none.sock"), task.Clock(), handoff_path="h.sock")
    factory.handed = []
    proto = factory.buildProtocol(None)
    transport = SocketLikeTransport()
    if tls:
        alsoProvides(transport, ISSLTransport)
    proto.makeConnection(transport)
    frame = encode_frame(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1"]))
    proto.dataReceived(frame)
    if tls:
        assert factory.handed == [] and factory.upstream.frames == [frame[4:]]
    else:
        assert factory.handed == [proto] and not hasattr(factory, "upstream")


def test_enforcing_worker_counts_its_refusals_for_the_main_process(tmp_path):
    cert, key, _ = write_pair(tmp_path)
    options = parse_args(BASE_ARGS + ["--tls-mode", "enforcing", "--tls-cert", cert, "--tls-key", key])
    harness = Harness(tmp_path)
    guards = WorkerGuards(options, task.Clock(), RejectionCounts())
    listen = guards.listen_factory(Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock()),
                                   harness.replica.config)
    for _ in range(2):
        sniffer = listen.buildProtocol(None)
        transport = StringTransport()
        sniffer.makeConnection(transport)
        sniffer.dataReceived(encode_frame(route_request("T1")))
        assert transport.disconnecting and transport.value() == b""
    assert guards.take_connection_counts() == {"refused_plain": 2}
    assert guards.take_connection_counts() == {}


def test_a_workers_counts_reach_the_main_metrics(tmp_path):
    metrics = NamesrvMetrics(RequestClassifier())
    main_tls = tlsmode.TlsSniffingFactory(protocol.Factory(), tlsmode.DISABLED, config=config())
    pool = ReadWorkerPool(1, routes=None, kv=None, config=None,
                          registry=types.SimpleNamespace(observers=RequestObservers([metrics])),
                          factory=None, priority=None, started=0.0, reactor=task.Clock(),
                          scheduler=turn_scheduler(task.Clock()), tls_factory=main_tls,
                          metrics=metrics)
    data = counts_message({(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.NO_PERMISSION): [3, 90]},
                          {"tls": 4, "refused_plain": 1}, {("route_read", "acl_unsigned"): 3})
    message, = MessageReader().feed(data)
    pool.record_counts(0, message["counts"], message["connections"], message["rejections"])
    text = metrics.exposition().decode()
    assert main_tls.counts["tls"] == 4 and main_tls.counts["refused_plain"] == 1
    assert 'rocketmq_namesrv_rejected_requests_total{reason="acl_unsigned",request_class="route_read"} 3.0' in text
    assert ('rocketmq_namesrv_requests_total{code="105",name="GET_ROUTEINFO_BY_TOPIC",request_class="route_read",'
            'response_code="16"} 3.0') in text
    assert pool.answered == {0: 3} and pool.rejected == {("route_read", "acl_unsigned"): 3}


def test_a_worker_reads_proxy_headers_with_the_main_processs_trusted_proxies(tmp_path):
    assert worker_arguments(config(proxyProtocolEnable=True, proxyProtocolTrustedAddresses="10.0.0.5,10.1.0.0/16")) \
        == ["--proxy-protocol-trusted", "10.0.0.5,10.1.0.0/16"]
    assert worker_arguments(config(proxyProtocolTrustedAddresses="10.0.0.5")) == []   # off: nothing passed
    options = parse_args(BASE_ARGS + ["--proxy-protocol-trusted", "10.0.0.5,10.1.0.0/16"])
    harness = Harness(tmp_path)
    guards = WorkerGuards(options, task.Clock(), RejectionCounts())
    listen = guards.listen_factory(Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock()),
                                   harness.replica.config)
    proxy_address = IPv4Address("TCP", "10.1.2.3", 5000)
    receiver = listen.buildProtocol(proxy_address)
    transport = StringTransport(peerAddress=proxy_address)
    receiver.makeConnection(transport)
    receiver.dataReceived(proxyheaders.v2(("203.0.113.7", 40001)))
    (connection,) = listen.wrapped.connections.values()
    assert isinstance(connection, WorkerConnection)
    assert (connection.peer, connection.via) == ("203.0.113.7:40001", "10.1.2.3:5000")
    stranger = listen.buildProtocol(IPv4Address("TCP", "192.0.2.1", 1))
    stranger.makeConnection(StringTransport())
    stranger.dataReceived(proxyheaders.v1(("10.0.0.7", 1)))
    assert guards.take_proxy_counts() == {"v2": 1, "untrusted": 1}
    assert guards.take_proxy_counts() == {}


def test_a_workers_proxy_counts_reach_the_main_metrics():
    from namesrv.observe.proxy_metrics import add_proxy_protocol_collector
    from namesrv.server.proxyprotocol import ProxyHeaderFactory, trusted_proxies
    metrics = NamesrvMetrics(RequestClassifier())
    main_proxy = ProxyHeaderFactory(protocol.Factory(), None, trusted_proxies("10.0.0.5"))
    main_proxy.counts["v1"] = 2
    add_proxy_protocol_collector(metrics, {"namesrv": main_proxy, "controller": None})
    pool = ReadWorkerPool(1, routes=None, kv=None, config=None,
                          registry=types.SimpleNamespace(observers=RequestObservers([metrics])),
                          factory=None, priority=None, started=0.0, reactor=task.Clock(),
                          scheduler=turn_scheduler(task.Clock()), metrics=metrics, proxy_factory=main_proxy)
    message, = MessageReader().feed(counts_message({}, proxy={"v1": 3, "bad": 1, "unheard-of": 5}))
    pool.record_counts(0, message["counts"], message["connections"], message["rejections"], proxy=message["proxy"])
    text = metrics.exposition().decode()
    assert 'rocketmq_namesrv_proxy_protocol_connections_total{kind="v1",port="namesrv"} 5.0' in text
    assert 'rocketmq_namesrv_proxy_protocol_connections_total{kind="bad",port="namesrv"} 1.0' in text
    assert "unheard-of" not in text and 'port="controller"' not in text


def test_with_acl_on_workers_still_answer_the_reads(tmp_path):
    harness = AclHarness(tmp_path)
    publisher = pool_for(harness.service).publisher
    assert sorted(publisher.local_codes()) == sorted(RouteProcessor.replicable_codes)

    @implementer(IRequestPolicy)
    class Opaque:   # a third-party policy that says nothing about copies keeps reads in the main process
        def check(self, request, connection):
            return None

        def done(self, request, connection, response_code):
            pass

    guarded = ProcessorRegistry(harness.service.registry.processors, policies=[*harness.service.registry.policies,
                                                                              Opaque()])
    assert local_codes(guarded) == []


def test_a_workers_refusals_reach_the_main_event_log_checked_field_by_field(tmp_path):
    harness = AclHarness(tmp_path)
    harness.replica.registry.dispatch(route_request("T1"), FakeConnection("127.0.0.7:40000"))
    refused = harness.replica.counts.take_refused()
    assert [(e["peer"], e["reason"], e["request_class"]) for e in refused] == [("127.0.0.7:40000", "acl_unsigned",
                                                                               "route_read")]
    events = RecordingEventLog()
    pool = ReadWorkerPool(1, routes=None, kv=None, config=None,
                          registry=types.SimpleNamespace(observers=RequestObservers(), events=events),
                          factory=None, priority=None, started=0.0, reactor=task.Clock(),
                          scheduler=turn_scheduler(task.Clock()))
    data = counts_message({}, {}, {}, refused + [{"peer": "x", "evil": "not a field"}, {"code": "not an int"}])
    message, = MessageReader().feed(data)
    pool.record_counts(0, message["counts"], message["connections"], message["rejections"], message["refused"])
    assert [(e["worker"], e["peer"], e["reason"]) for e in events.named("request_refused")] == [
        (0, "127.0.0.7:40000", "acl_unsigned")]
def test_the_workers_answer_cache_keeps_a_signed_read_per_host_until_the_acl_file_changes(tmp_path):
    harness = AclHarness(tmp_path)
    harness.guards.startService()
    try:
        factory = Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock())
        cache = harness.replica.answer_cache
        here, here_transport = connect(factory)   # StringTransport's peer: 192.168.1.1
        for opaque in (1, 2):
            here.dataReceived(encode_frame(signed_route("T1", opaque=opaque)))
        first, second = [decode_frame(frame[4:]) for frame in written_frames(here_transport)]
        assert first.code == second.code == ResponseCode.SUCCESS and cache.hits == 1
        harness.acl.write_text(ACL.replace("rocketmq2", "rocketmq3"))
        harness.clock.advance(0.5)
        assert harness.guards.acl_store.reloads == 1
        here.dataReceived(encode_frame(signed_route("T1", opaque=3)))
        (gone,) = [decode_frame(frame[4:]) for frame in written_frames(here_transport)]
        assert gone.code == ResponseCode.NO_PERMISSION and cache.hits == 1
    finally:
        harness.guards.stopService()
