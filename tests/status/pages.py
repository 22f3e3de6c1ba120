"""A service with its status page, asked without sockets, for the status tests."""

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.web.test.requesthelper import DummyRequest

from namesrv.config import NamesrvConfig
from namesrv.protocol.codes import ResponseCode
from namesrv.service import make_service
from tests.brokers import register_request
from tests.fakes import one_turn


def make(tmp_path, **extra):
    config = NamesrvConfig()
    props = {"listenPort": "0", "kvConfigPath": str(tmp_path / "kv.json"), "eventLogEnable": "false",
             "routeSnapshotEnable": "false", "configStorePath": str(tmp_path / "namesrv.properties"),
             "statusListenPort": "1"}
    props.update(extra)
    config.update(props)
    wall = task.Clock()
    wall.advance(1_700_000_000)
    svc = make_service(config, reactor=wall, clock=task.Clock())
    svc.wall = wall
    svc.page = svc.getServiceNamed("status-page")
    return svc


def get(svc, uri, authorization=None, method=b"GET", advance=None):
    """(status, headers, text) of one request to the page's resource (``advance``: a task.Clock turned
    until the answer is finished, for answers built over reactor turns)."""
    path, _, _ = uri.partition("?")
    request = DummyRequest([p.encode() for p in path.strip("/").split("/") if p])
    request.uri, request.path, request.method = uri.encode(), path.encode(), method
    request.client = IPv4Address("TCP", "127.0.0.1", 40000)
    if authorization is not None:
        request.requestHeaders.setRawHeaders(b"authorization", [authorization])
    result = svc.page.resource.render(request)
    if isinstance(result, bytes):
        request.write(result)
        request.finish()
    for _ in range(1000 if advance is not None else 0):
        if request.finished:
            break
        one_turn(advance)
    assert request.finished
    return request.responseCode or 200, request.responseHeaders, b"".join(request.written).decode()


def register(svc, conn, *args, **kwargs):
    answer = svc.registry.dispatch(register_request(*args, **kwargs), conn)
    assert answer.code == ResponseCode.SUCCESS
    return answer
