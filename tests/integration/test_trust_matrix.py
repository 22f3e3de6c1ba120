"""The trust matrix (issue 54, item 9): every request code of the class table × who signs × where from, against
one live `twistd namesrv` with ACL on, a read worker in the path (exclusive: every client connection is the
worker's, which answers its replica's reads and forwards the rest) and the embedded controller on its port.

The expectation of each cell is computed from namesrv/dispatch/classes.py: the code's class (a header's
escalation included), the resources its entry names and the ports that answer it. A code added to the table
is in the matrix without a change here. What each identity may do is the ACL file below, read the way
docs/security.md says (a policy allows a class on resources from sources; ``brokerAllowedAddresses`` lets
unsigned broker-control in from its addresses, and keeps every broker-control request from elsewhere out).

A refused cell must be a trust refusal (NO_PERMISSION whose remark names the class or the address list); an
allowed cell anything but NO_PERMISSION (a processor may still find the request wrong). Each cell is sent
twice, the same bytes but the opaque, and the allowed source's cells first: an answer kept for a frame from
one place must never be replayed to the same frame from another.
"""

import json

import pytest

from namesrv.dispatch.classes import ADMIN_READ, ADMIN_WRITE, ALL_CLASSES, BROKER, BROKER_CONTROL, CONTROLLER, \
    NAMESRV, ROUTE_READ, TABLE
from namesrv.protocol.codes import RequestCode as C, ResponseCode, request_name
from processors.route import RouteProcessor
from tests.brokers import register_request
from tests.controller.wire import controller_ports
from tests.integration.server import NamesrvProcess
from tests.integration.workers import WORKERS, answered_by_workers
from tests.security.live import ALLOWED_SOURCE, OTHER_SOURCE, SourcedClient, signed, tampered

CLUSTER, GROUP, OTHER_GROUP, TOPIC = "ClusterT", "broker-a", "broker-b", "TopicT"
BROKER_ADDR = "127.0.0.1:10911"

ACL = """
accounts:
  - {accessKey: opsAdmin10, secretKey: ops-admin-secret-10, admin: "true"}
users:
  - {username: admin22, password: admin22-secret-123}
  - {username: reader22, password: reader22-secret-123}
  - {username: brokerA, password: brokerA-secret-123}
acls:
  - subject: User:admin22
    policies:
      - entries:
          - {resource: "*", actions: [All], sourceIps: [127.0.0.1/32]}
  - subject: User:reader22
    policies:
      - entries:
          - {resource: "*", actions: [RouteRead, AdminRead], sourceIps: [127.0.0.1/32]}
  - subject: User:brokerA
    policies:
      - entries:
          - {resource: "Broker:broker-a", actions: [BrokerControl], sourceIps: [127.0.0.1/32]}
          - {resource: "Topic:*", actions: [RouteRead], sourceIps: [127.0.0.1/32]}
"""


class Identity:
    """Who signs, and what the file above lets it do: ``classes`` from ``sources`` (None: anywhere);
    ``broker_group`` limits broker-control to requests naming that group; ``names`` the group the requests
    it sends name."""

    def __init__(self, name, credentials=None, classes=(), sources=None, broker_group=None, forged=None,
                 names=GROUP):
        self.name, self.credentials, self.classes, self.sources = name, credentials, frozenset(classes), sources
        self.broker_group, self.forged, self.names = broker_group, forged, names

    def may(self, request_class, source):
        if self.forged or self.credentials is None:
            return False
        if request_class not in self.classes or (self.sources is not None and source not in self.sources):
            return False
        return request_class != BROKER_CONTROL or self.broker_group in (None, self.names)


ADMIN10 = ("opsAdmin10", "ops-admin-secret-10")
ADMIN2 = ("admin22", "admin22-secret-123")
HERE_ONLY = {ALLOWED_SOURCE}
#: valid signatures first (their answers may be kept), then the ones that must never be served
IDENTITIES = (
    Identity("admin (ACL 1.0, from anywhere)", ADMIN10, ALL_CLASSES),
    Identity("admin (ACL 2.0)", ADMIN2, ALL_CLASSES, HERE_ONLY),
    Identity("broker", ("brokerA", "brokerA-secret-123"), (BROKER_CONTROL, ROUTE_READ), HERE_ONLY, GROUP),
    Identity("broker, another group", ("brokerA", "brokerA-secret-123"), (BROKER_CONTROL, ROUTE_READ), HERE_ONLY,
             GROUP, names=OTHER_GROUP),
    Identity("read-only", ("reader22", "reader22-secret-123"), (ROUTE_READ, ADMIN_READ), HERE_ONLY),
    Identity("unsigned"),
    Identity("bad signature", ("admin22", "not-the-secret-of-admin22"), forged="secret"),
    Identity("tampered", ADMIN2, forged="tampered"),
)
SOURCES = (ALLOWED_SOURCE, OTHER_SOURCE)
BROKER_ALLOWED = HERE_ONLY

#: what makes a request well formed beyond the resources its table entry names (a code without an entry
#: here is sent with those alone: a processor's error answer is still not a refusal)
FIELDS = {
    C.UNREGISTER_BROKER: {"brokerAddr": BROKER_ADDR, "brokerId": "0"},
    C.QUERY_DATA_VERSION: {"brokerAddr": BROKER_ADDR, "brokerId": "0"},
    C.BROKER_HEARTBEAT: {"brokerAddr": BROKER_ADDR, "brokerId": "0", "heartbeatTimeoutMills": "60000"},
    C.CONTROLLER_ALTER_SYNC_STATE_SET: {"masterBrokerId": "1", "masterEpoch": "1"},
    C.CONTROLLER_ELECT_MASTER: {"brokerId": "1", "designateElect": "false"},
    C.CONTROLLER_REGISTER_BROKER: {"brokerId": "1", "brokerAddress": BROKER_ADDR},
    C.CONTROLLER_APPLY_BROKER_ID: {"appliedBrokerId": "1", "registerCheckCode": BROKER_ADDR + ";1700000000000"},
    C.GET_KV_CONFIG: {"namespace": "NS", "key": "k"},
    C.PUT_KV_CONFIG: {"namespace": "NS", "key": "k", "value": "v"},
    C.DELETE_KV_CONFIG: {"namespace": "NS", "key": "k"},
    C.GET_KVLIST_BY_NAMESPACE: {"namespace": "NS"},
    C.CLEAN_BROKER_DATA: {"isCleanLivingBroker": "false"},
}
BODIES = {
    C.QUERY_DATA_VERSION: json.dumps({"counter": 1, "timestamp": 1700000000000}).encode(),
    C.CONTROLLER_ALTER_SYNC_STATE_SET: json.dumps({"syncStateSet": [1], "syncStateSetEpoch": 1}).encode(),
    C.CONTROLLER_GET_SYNC_STATE_DATA: json.dumps([GROUP]).encode(),
}
VALUES = {"clusterName": CLUSTER, "cluster": CLUSTER, "topic": TOPIC}


def variants(code):
    """(label, extra header fields) of each way ``code`` is sent: as it is, and with each escalation."""
    entry = TABLE[code]
    found = [("", {})]
    if entry.escalation:
        field, _ = entry.escalation
        found.append((" %s=true" % field, {field: "true"}))
    return found


def request_for(code, identity, extra):
    entry = TABLE[code]
    ext = dict(FIELDS.get(code, {}))
    for kind, field in entry.resources:
        ext[field] = identity.names if kind == BROKER else VALUES.get(field, "x")
    ext.update(extra)
    if code == C.REGISTER_BROKER:
        template = register_request(CLUSTER, identity.names, BROKER_ADDR, topics=())
        ext, body = dict(template.ext), template.body
    else:
        body = BODIES.get(code)
    request = signed(code, ext, body, identity.credentials)
    return tampered(request) if identity.forged == "tampered" else request


def expected_refusal(request, identity, source):
    """None when the table and the file let ``identity`` send ``request`` from ``source``, else the class."""
    request_class = TABLE[request.code].classify(request)
    if identity.credentials is None:
        allowed = request_class == BROKER_CONTROL and source in BROKER_ALLOWED
    else:
        allowed = identity.may(request_class, source) and (request_class != BROKER_CONTROL
                                                           or source in BROKER_ALLOWED)
    return None if allowed else request_class


def is_trust_refusal(answer, request_class):
    return answer.code == ResponseCode.NO_PERMISSION and (
        request_class in answer.remark or "brokerAllowedAddresses" in answer.remark)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("matrix")
    (workdir / "plain_acl.yml").write_text(ACL)
    (port,) = controller_ports(1)
    properties = dict(WORKERS, aclEnable="true", aclFile=str(workdir / "plain_acl.yml"),
                      brokerAllowedAddresses="127.0.0.1/32", enableControllerInNamesrv="true",
                      controllerDLegerGroup="matrix", controllerDLegerPeers="n0-127.0.0.1:%d" % port,
                      controllerDLegerSelfId="n0", controllerStorePath=str(workdir / "controller"))
    process = NamesrvProcess(workdir, properties).start()
    process.controller_port = port
    yield process
    process.stop()


def run_cells(port, codes, clients):
    """Every cell of ``codes`` on ``port``: [(failure line)], and how many cells were sent."""
    failures, sent = [], 0
    for source in SOURCES:
        client = clients[source]
        for code in codes:
            for label, extra in variants(code):
                for identity in IDENTITIES:
                    request = request_for(code, identity, extra)
                    refusal = expected_refusal(request, identity, source)
                    for attempt in (1, 2):
                        answer = client.call(request.with_changes(opaque=0))
                        sent += 1
                        right = (is_trust_refusal(answer, refusal) if refusal
                                 else answer.code != ResponseCode.NO_PERMISSION)
                        if not right:
                            failures.append("%s %d %s%s, %s from %s (try %d): expected %s, got %d %r"
                                            % (port, code, request_name(code), label, identity.name, source, attempt,
                                               "a refusal (%s)" % refusal if refusal else "no refusal", answer.code,
                                               answer.remark))
    return failures, sent


def test_every_cell_of_the_trust_matrix_on_both_ports_and_through_the_read_worker(server):
    worker_codes = sorted(code for code in TABLE if NAMESRV in TABLE[code].ports
                          and code in RouteProcessor.replicable_codes)
    main_codes = sorted(code for code in TABLE if NAMESRV in TABLE[code].ports and code not in worker_codes)
    controller_codes = sorted(code for code in TABLE if CONTROLLER in TABLE[code].ports)
    assert worker_codes and controller_codes

    # the route the reads find: broker-a's topics, registered unsigned from the broker address list
    with SourcedClient(server.port) as broker:
        answer = broker.call(register_request(CLUSTER, GROUP, BROKER_ADDR, topics=[TOPIC, TOPIC + "-x"]))
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        clients = {source: SourcedClient(server.port, source) for source in SOURCES}
        try:
            # first on connections that stay the worker's (a broker-control request hands a connection to the
            # main process), then the rest, which the worker forwards
            failures, worker_cells = run_cells("namesrv (read worker)", worker_codes, clients)
            more, _ = run_cells("namesrv", main_codes, clients)
            failures += more
        finally:
            for client in clients.values():
                client.close()
    controllers = {source: SourcedClient(server.controller_port, source) for source in SOURCES}
    try:
        more, _ = run_cells("controller", controller_codes, controllers)
        failures += more
    finally:
        for client in controllers.values():
            client.close()
    # a port runs none of the other port's codes, whoever signs
    for port, name, codes in ((server.controller_port, "controller", set(TABLE) - set(controller_codes)),
                              (server.port, "namesrv", set(TABLE) - set(worker_codes) - set(main_codes))):
        with SourcedClient(port) as client:
            for code in sorted(codes):
                answer = client.call(request_for(code, IDENTITIES[0], {}))
                if answer.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    failures.append("%s answered %d %s: %d %r" % (name, code, request_name(code), answer.code,
                                                                   answer.remark))
    assert not failures, "%d cells wrong:\n%s" % (len(failures), "\n".join(failures))
    # the worker checked and answered its replica's reads itself: all of them, refusals included
    assert answered_by_workers(server) >= worker_cells, server.log()[-3000:]
