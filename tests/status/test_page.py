"""The status page in-process: real tables and processors, task.Clock for liveness, DummyRequest for HTTP."""

import base64
import html
import re

import pytest
from twisted.internet import task
from twisted.web.error import UnsupportedMethod

from namesrv.config import NamesrvConfig
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request
from namesrv.service import make_service
from namesrv.status import views
from tests.brokers import route_request
from tests.fakes import FakeConnection as Conn
from tests.status.pages import get, make, register


ACL = """
accounts:
  - accessKey: watcher
    secretKey: watcher-secret
"""


def broker_row(text, addr):
    match = re.search(r'<tr class="([\w-]+)" data-addr="%s">(.*?)</tr>' % re.escape(addr), text)
    if match is None:
        return None
    cells = [html.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", match.group(2))]
    return match.group(1), cells


def test_broker_rows_show_heartbeat_age_and_expiry(tmp_path):
    svc = make(tmp_path)
    register(svc, Conn("127.0.0.1:1"), "C1", "broker-a", "127.0.0.1:10911", 0, ["TopicA", "TopicB"],
             ha_addr="127.0.0.1:10912")
    register(svc, Conn("127.0.0.1:2"), "C1", "broker-a", "127.0.0.1:10921", 1, ["TopicA", "TopicB"],
             version=Version.V5_3_3)
    status, headers, text = get(svc, "/")
    assert status == 200 and headers.getRawHeaders(b"content-type") == [b"text/html; charset=utf-8"]
    assert broker_row(text, "127.0.0.1:10911") == ("alive", [
        "C1", "broker-a", "0", "127.0.0.1:10911", "127.0.0.1:10912", "V4_9_8", "1 @ 1700000000000", "2",
        "0 s ago", "120 s", "alive"])
    assert broker_row(text, "127.0.0.1:10921")[1][5] == "V5_3_3"

    svc.routes.clock.advance(95)
    assert broker_row(get(svc, "/fragment/brokers")[2], "127.0.0.1:10911")[0] == "near-expiry"
    svc.registry.dispatch(make_request(RequestCode.BROKER_HEARTBEAT, {
        "clusterName": "C1", "brokerAddr": "127.0.0.1:10921", "brokerName": "broker-a"}), Conn())
    svc.routes.clock.advance(30)
    text = get(svc, "/fragment/brokers")[2]
    assert broker_row(text, "127.0.0.1:10911")[0] == "expired"
    assert broker_row(text, "127.0.0.1:10911")[1][8] == "125 s ago"
    assert broker_row(text, "127.0.0.1:10921")[0] == "alive"

    svc.wall.advance(5)
    svc.housekeeping.scan_not_active_brokers()
    text = get(svc, "/fragment/brokers")[2]
    assert broker_row(text, "127.0.0.1:10911")[0] == "removed"
    events = get(svc, "/fragment/events")[2]
    assert events.index("broker_expired") < events.index("broker_registered")
    svc.wall.advance(views.EXPIRED_SHOWN_SECONDS + 1)
    assert broker_row(get(svc, "/fragment/brokers")[2], "127.0.0.1:10911") is None


def test_a_broker_whose_connection_closed_stays_red_with_why_and_when(tmp_path):
    """The common crash (kill -9, OOM, a cut cable): the connection closes and the broker is forgotten at once.
    Its row stays, as an expired one does, saying why and when (issue 39: it used to vanish)."""
    svc = make(tmp_path)
    crashed, other = Conn("127.0.0.1:1"), Conn("127.0.0.1:2")
    register(svc, crashed, "C1", "broker-a", "127.0.0.1:10911", 0, ["TopicA", "TopicA2"])
    register(svc, other, "C1", "broker-b", "127.0.0.1:10921", 0, ["TopicB", "TopicB2"])
    svc.wall.advance(7)   # 1_700_000_007: 22:13:27 UTC
    svc.housekeeping.connection_closed(crashed)
    svc.wall.advance(0)
    text = get(svc, "/fragment/brokers")[2]
    state, cells = broker_row(text, "127.0.0.1:10911")
    assert state == "removed" and cells[:4] == ["C1", "broker-a", "0", "127.0.0.1:10911"]
    assert cells[-1] == "connection closed 22:13:27 UTC" and cells[8] == ""
    assert broker_row(text, "127.0.0.1:10921")[0] == "alive"
    events = get(svc, "/fragment/events")[2]
    assert "reason=channel_closed" in events and "brokerAddr=127.0.0.1:10911" in events

    register(svc, Conn("127.0.0.1:3"), "C1", "broker-a", "127.0.0.1:10911", 0, ["TopicA", "TopicA2"])   # it came back
    assert broker_row(get(svc, "/fragment/brokers")[2], "127.0.0.1:10911")[0] == "alive"
    svc.housekeeping.connection_closed(other)
    svc.wall.advance(0)
    assert broker_row(get(svc, "/fragment/brokers")[2], "127.0.0.1:10921")[0] == "removed"
    svc.wall.advance(views.EXPIRED_SHOWN_SECONDS + 1)
    assert broker_row(get(svc, "/fragment/brokers")[2], "127.0.0.1:10921") is None


def test_connections_no_broker_registered_on_never_reach_the_recent_events(tmp_path):
    """A client's, a tool's or a probe's connection closing is not news: 120 of them in 4 minutes pushed a
    broker's unregistration off the list (issue 39)."""
    svc = make(tmp_path)
    broker = Conn("127.0.0.1:1")
    register(svc, broker, "C1", "broker-a", "127.0.0.1:10911", 0, ["TopicA", "TopicA2"])
    svc.housekeeping.connection_closed(broker)
    for port in range(2, 600):
        svc.housekeeping.connection_closed(Conn("127.0.0.1:%d" % port))
        svc.wall.advance(0)
    events = get(svc, "/fragment/events")[2]
    assert "broker_unregistered" in events and "brokerAddr=127.0.0.1:10911" in events
    assert "peer=127.0.0.1:2," not in events and "brokerAddr=None" not in events


def test_the_black_list_value_may_wrap_between_its_keys(tmp_path):
    text = get(make(tmp_path), "/")[2]
    assert "configBlackList;<wbr>configStorePath;<wbr>kvConfigPath;<wbr>" in text


def test_topic_search_shows_the_route_answer_itself(tmp_path):
    svc = make(tmp_path, orderMessageEnable="true")
    register(svc, Conn(), "C1", "broker-a", "127.0.0.1:10911", 0, ["TopicA", "TopicB", "Other"])
    svc.kv.table["ORDER_TOPIC_CONFIG"] = {"TopicA": "broker-a:4"}   # as a loaded KV file holds it
    expected = svc.registry.dispatch(route_request("TopicA", version=Version.V4_9_8), Conn())
    text = get(svc, "/?t=TopicA")[2]
    body = re.search(r'<details><summary>Answer body \((\d+) bytes, as sent\)</summary><pre>(.*?)</pre>', text)
    assert html.unescape(body.group(2)).encode() == expected.body and int(body.group(1)) == len(expected.body)
    assert "6 (RW)" in text and "<code>broker-a:4</code>" in text
    assert '<a href="?t=TopicA">TopicA</a>' in text and "1 topics match" in text

    text = get(svc, "/?t=Topic")[2]
    assert "Route of" not in text and "2 topics match" in text
    assert "<code>No topic route info in name server for the topic: Topic\nSee" in text
    assert "response code 17" in text


def test_pages_are_bounded(tmp_path):
    svc = make(tmp_path)
    for i in range(60):
        register(svc, Conn("127.0.0.1:%d" % (1000 + i)), "C%d" % (i % 3), "b%02d" % i, "127.0.0.1:%d" % (20000 + i),
                 0, ["T%03d" % (i * 2), "T%03d" % (i * 2 + 1)])
    text = get(svc, "/")[2]
    assert text.count('data-addr="') == views.PAGE_SIZE
    assert "60 brokers, page 1 of 2" in text and "120 topics, page 1 of 3" in text
    text = get(svc, "/?bp=2&tp=3")[2]
    assert text.count('data-addr="') == 10 and "T119" in text and "T099" not in text
    text = get(svc, "/fragment/brokers?bq=c2")[2]
    assert text.count('data-addr="') == 20


def test_page_of_sorts_only_what_it_shows():
    names = {"T%03d" % i: None for i in reversed(range(120))}
    assert views.page_of(names, "", 2) == (["T%03d" % i for i in range(50, 100)], 120, 2, 3)
    assert views.page_of(names, "T11", 1) == (["T11%d" % i for i in range(10)], 10, 1, 1)
    assert views.page_of(names, "", 99)[2] == 3 and views.page_of({}, "x", 1) == ([], 0, 1, 1)


def test_kv_and_configuration_with_black_list_marks(tmp_path):
    svc = make(tmp_path)
    svc.kv.table["NS"] = {"k<1>": "v&1"}
    text = get(svc, "/?ns=NS")[2]
    assert '<td><a href="?ns=NS">NS</a></td><td class="num">1</td>' in text
    assert '<td class="name">k&lt;1&gt;</td><td class="value">v&amp;1</td>' in text
    assert '<tr><td>kvConfigPath</td><td class="value">%s</td><td><span class="badge black">' % html.escape(
        str(tmp_path / "kv.json")) in text
    assert '<tr><td>orderMessageEnable</td><td class="value">false</td><td></td></tr>' in text


def test_everything_is_escaped(tmp_path):
    svc = make(tmp_path)
    register(svc, Conn(), "<b>C", "<script>x</script>", "127.0.0.1:10911", 0, ["<img src=x>", "T2"])
    text = get(svc, "/?t=<img src=x>&bq=<script>")[2]
    assert "<script>x" not in text and "<img src=x>" not in text and "<b>C" not in text
    assert "&lt;script&gt;x&lt;/script&gt;" in text


def test_read_only_and_unknown_paths(tmp_path):
    svc = make(tmp_path)
    assert get(svc, "/nothing")[0] == 404
    assert get(svc, "/fragment/nothing")[0] == 404
    with pytest.raises(UnsupportedMethod) as refused:   # twisted.web's Site turns it into 405
        get(svc, "/", method=b"POST")
    assert sorted(refused.value.allowedMethods) == [b"GET", b"HEAD"]
    status, headers, script = get(svc, "/static/status.js")
    assert status == 200 and "setInterval" in script
    assert headers.getRawHeaders(b"content-security-policy")[0].startswith(b"default-src 'self'")


def basic(user, password):
    return b"Basic " + base64.b64encode(("%s:%s" % (user, password)).encode())


def test_acl_asks_what_an_admin_read_needs(tmp_path):
    (tmp_path / "acl.yml").write_text(ACL)
    svc = make(tmp_path, aclEnable="true", aclFile=str(tmp_path / "acl.yml"), aclSignedClasses="adminRead")
    status, headers, text = get(svc, "/")
    assert status == 401 and headers.getRawHeaders(b"www-authenticate")[0].startswith(b'Basic realm=')
    assert get(svc, "/", basic("watcher", "wrong-secret"))[:3:2] == (401, "wrong secretKey for accessKey=watcher\n")
    assert get(svc, "/", basic("nobody", "x"))[2] == "No acl config for nobody\n"
    assert get(svc, "/fragment/brokers", basic("watcher", "watcher-secret"))[0] == 200

    open_page = make(tmp_path, aclEnable="true", aclFile=str(tmp_path / "acl.yml"), aclSignedClasses="adminWrite")
    assert get(open_page, "/")[0] == 200


def test_off_by_default(tmp_path):
    svc = make(tmp_path, statusListenPort="1")
    assert svc.page.port_number == 1 and svc.page.interface == "127.0.0.1"
    config = NamesrvConfig()
    config.update({"listenPort": "0", "kvConfigPath": str(tmp_path / "kv2.json"), "eventLogEnable": "false",
                   "routeSnapshotEnable": "false"})
    plain = make_service(config, clock=task.Clock())
    assert [s.name for s in plain if s.name == "status-page"] == []


def listed_topics(text):
    return re.findall(r'<a href="\?t=([^"&]+)">', text[text.index('id="s-topics"'):])


def test_sorted_topics_follow_changes_at_most_every_two_seconds(tmp_path):
    svc = make(tmp_path)
    register(svc, Conn("127.0.0.1:1"), "C1", "b1", "127.0.0.1:10911", 0, ["T2", "T1"])
    assert listed_topics(get(svc, "/")[2]) == ["T1", "T2"]
    register(svc, Conn("127.0.0.1:2"), "C1", "b2", "127.0.0.1:10921", 0, ["T0", "T3"])
    assert listed_topics(get(svc, "/")[2]) == ["T1", "T2"]       # sorted 0 s ago: the list may lag...
    assert "Route of <code>T3</code>" in get(svc, "/?t=T3")[2]    # ...but an exact search does not
    svc.wall.advance(2)                                           # the wall clock does not count...
    assert listed_topics(get(svc, "/")[2]) == ["T1", "T2"]
    svc.clock.advance(2)                                          # ...the monotonic one does
    assert listed_topics(get(svc, "/")[2]) == ["T0", "T1", "T2", "T3"]
    assert views.page_of(["a", "b", "c"], "", 2, per_page=2, already_sorted=True) == (["c"], 3, 2, 2)


def test_twistd_option_turns_the_page_on():
    from namesrv.tap import Options
    options = Options()
    options.parseOptions(["--statusListenPort", "9877"])
    assert options["config"].statusListenPort == 9877
    assert Options().parseOptions([]) is None and NamesrvConfig().statusListenPort == 0


def test_a_failing_section_is_a_500_and_the_server_goes_on(tmp_path):
    svc = make(tmp_path)
    processor = svc.registry.processor_for(RequestCode.GET_ROUTEINFO_BY_TOPIC)

    def broken(request, connection):
        raise RuntimeError("boom")
    processor.process_request, working = broken, processor.process_request
    status, _, text = get(svc, "/?t=TopicA")
    assert status == 500 and text == "status page failed; see the server log\n"
    processor.process_request = working
    assert get(svc, "/?t=TopicA")[0] == 200


def test_a_failing_fragment_is_a_500_too(tmp_path, monkeypatch):
    svc = make(tmp_path)
    monkeypatch.setattr(views, "broker_rows", lambda *args, **kwargs: 1 / 0)
    assert get(svc, "/fragment/brokers")[:3:2] == (500, "status page failed; see the server log\n")
    assert get(svc, "/fragment/events")[0] == 200
