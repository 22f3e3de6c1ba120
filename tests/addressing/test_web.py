"""``/rocketmq/{subgroup}`` byte by byte through twisted.web (a Site on a StringTransport): what a Java
client, curl and a hostile peer get."""

from prometheus_client import generate_latest

import pytest
from twisted.internet import task
from twisted.internet.testing import StringTransport
from twisted.web import resource

from namesrv.addressing.wiring import PATH, address_service
from namesrv.observe.httpport import QuietSite
from tests.addressing.http import Port, exchange, get
from tests.config_for import make_config


LISTED = "127.0.0.1:9876;127.0.0.1:9877"


def serving(**overrides):
    values = dict(prometheusListenPort=5557, addressServiceNamesrvAddr=LISTED)
    values.update(overrides)
    clock = task.Clock()
    clock.advance(1000)
    port = Port()
    service = address_service(make_config(**values), port, clock, clock)
    return port, service, clock


def java_reads(body):
    """``TopAddressing.clearNewLine``: trimmed, up to the first line end."""
    text = body.decode().strip()
    return text.split("\r")[0].split("\n")[0]


def test_a_java_client_gets_the_list_in_its_own_format():
    port, _, _ = serving()
    status, headers, body, _ = get(port.site(), b"/rocketmq/nsaddr")
    assert status == 200 and java_reads(body) == LISTED
    assert headers[b"content-type"] == b"text/plain; charset=utf-8" and headers[b"cache-control"] == b"no-store"
    assert body == LISTED.encode() + b"\n"


def test_a_client_with_a_unit_name_gets_the_list_of_its_listed_subgroup():
    port, _, _ = serving(addressServiceSubgroups="nsaddr;nsaddr-unit1")
    assert get(port.site(), b"/rocketmq/nsaddr-unit1?nofix=1")[:1] == (200,)
    status, _, body, _ = get(port.site(), b"/rocketmq/nsaddr-unit2?nofix=1")
    assert status == 404 and body == b"unknown subgroup nsaddr-unit2: this name server answers " \
                                     b"/rocketmq/nsaddr, /rocketmq/nsaddr-unit1\n"


def test_the_answer_follows_the_probes():
    port, service, clock = serving()
    service.liveness.failed("127.0.0.1:9877", clock.seconds() + 10, "refused")
    assert java_reads(get(port.site(), b"/rocketmq/nsaddr")[2]) == "127.0.0.1:9876"


def test_head_answers_without_a_body():
    port, _, _ = serving()
    status, headers, body, _ = get(port.site(), b"/rocketmq/nsaddr", b"HEAD")
    assert status == 200 and body == b""


@pytest.mark.parametrize("target, status, says", [
    (b"/rocketmq", 404, b"ask for /rocketmq/{subgroup}: this name server answers /rocketmq/nsaddr"),
    (b"/rocketmq/", 404, b"ask for /rocketmq/{subgroup}"),
    (b"/rocketmq/nsaddr/x", 404, b"ask for /rocketmq/{subgroup}"),
    (b"/rocketmq/other", 404, b"unknown subgroup other"),
    (b"/rocketmq/a%2Fb", 400, b"'a/b' is not a subgroup"),
    (b"/rocketmq/%00%01", 400, b"'\\x00\\x01' is not a subgroup"),
    (b"/rocketmq/%C3%A9t%C3%A9", 400, b"'\\xc3\\xa9t\\xc3\\xa9' is not a subgroup"),
    (b"/rocketmq/..", 400, b"'..' is not a subgroup"),
    (b"/rocketmq/" + b"x" * 200, 400, b"'" + b"x" * 64 + b"...' is not a subgroup"),
    (b"/rocketmq/" + b"x" * 600, 414, b"request target longer than 512 bytes"),
])
def test_bad_input_gets_a_short_text_saying_what_is_wrong(target, status, says):
    port, _, _ = serving()
    got, headers, body, _ = get(port.site(), target)
    assert got == status and says in body and headers[b"content-type"] == b"text/plain; charset=utf-8"
    assert body.endswith(b"\n") and body.count(b"\n") == 1


def test_other_methods_get_405_naming_what_is_allowed():
    port, _, _ = serving()
    status, headers, body, _ = exchange(port.site(), b"POST /rocketmq/nsaddr HTTP/1.1\r\nHost: ns\r\n"
                                                     b"Content-Length: 3\r\n\r\nabc")
    assert status == 405 and headers[b"allow"] == b"GET, HEAD" and b"method 'POST' not allowed" in body


def test_an_overlong_request_line_or_header_gets_400_saying_so_and_the_connection_closed():
    port, _, _ = serving()
    status, _, body, closed = get(port.site(), b"/rocketmq/" + b"x" * 20000)
    assert status == 400 and closed and body == b"request line or header longer than 16384 bytes\n"
    status, _, body, closed = exchange(port.site(), b"GET /rocketmq/nsaddr HTTP/1.1\r\nX: " + b"y" * 20000 +
                                       b"\r\n\r\n")
    assert status == 400 and closed and b"longer than 16384 bytes" in body


def test_a_flood_gets_429_with_retry_after_then_answers_again():
    port, _, clock = serving(addressServiceMaxRequestsPerSecond=5)
    site = port.site()
    codes = [get(site, b"/rocketmq/nsaddr")[0] for _ in range(8)]
    assert codes == [200] * 5 + [429] * 3
    status, headers, body, _ = get(site, b"/rocketmq/nsaddr")
    assert headers[b"retry-after"] == b"1" and b"too many requests: the address service answers 5 a second" in body
    clock.advance(1.0)
    assert [get(site, b"/rocketmq/nsaddr")[0] for _ in range(6)] == [200] * 5 + [429]


def test_answers_are_counted_by_status():
    port, _, _ = serving()
    site = port.site()
    for target in (b"/rocketmq/nsaddr", b"/rocketmq/nsaddr", b"/rocketmq/zz", b"/rocketmq/%00"):
        get(site, target)
    text = generate_latest(port.metrics.registry).decode()
    assert 'rocketmq_namesrv_address_service_requests_total{code="200"} 2.0' in text
    assert 'rocketmq_namesrv_address_service_requests_total{code="404"} 1.0' in text
    assert 'rocketmq_namesrv_address_service_requests_total{code="400"} 1.0' in text


def test_when_off_the_path_says_how_to_turn_it_on():
    port, service, _ = serving(addressServiceNamesrvAddr="")
    assert service is None and PATH in port.children
    status, _, body, _ = get(port.site(), b"/rocketmq/nsaddr")
    assert status == 404 and b"the address service is off: set addressServiceNamesrvAddr" in body


def test_an_idle_connection_is_closed_after_a_minute_not_twelve_hours():
    from namesrv.observe.httpport import IDLE_TIMEOUT
    port, _, clock = serving()
    root = resource.Resource()
    root.putChild(PATH, port.children[PATH])
    channel = QuietSite(root, reactor=clock).buildProtocol(None)
    transport = StringTransport()
    channel.makeConnection(transport)
    channel.dataReceived(b"GET /rocketmq/nsaddr HTTP/1.1\r\nHost: ns\r\n\r\n")
    assert b" 200 " in transport.value() and not transport.disconnecting   # kept alive
    clock.advance(IDLE_TIMEOUT - 1)
    assert not transport.disconnecting
    clock.advance(2)
    assert transport.disconnecting and IDLE_TIMEOUT == 60


@pytest.mark.parametrize("raw", [b"GET /rocketmq/\xff\xfe HTTP/1.1\r\nHost: ns\r\n\r\n", b"\x00\x01\x02\r\n\r\n",
                                 b"GET /rocketmq/nsaddr HTTP/9.9\r\n\r\n"])
def test_a_request_twisted_web_cannot_parse_gets_400_and_a_close_and_the_next_one_is_answered(raw):
    port, _, _ = serving()
    site = port.site()
    status, _, _, closed = exchange(site, raw)
    assert status == 400 and closed
    status, _, body, _ = get(site, b"/rocketmq/nsaddr")
    assert (status, body) == (200, LISTED.encode() + b"\n")
