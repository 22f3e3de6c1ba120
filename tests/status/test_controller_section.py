"""The status page's Controller section in-process: a controller on task.Clock whose brokers start,
sync, die and get a new master, read through the page's resource as a browser asks for it."""

import html
import re

from namesrv.status.controller import section
from tests.controller.harness import ControllerHarness, FakeBroker
from tests.integration.server import free_port
from tests.status.pages import get, make


def cells(text, group):
    """(row class, [cell text]) of ``group``'s row in the Controller section, or None."""
    match = re.search(r'<tr class="([\w-]+)" data-group="%s">(.*?)</tr>' % re.escape(group), text, re.S)
    if match is None:
        return None
    found = [html.unescape(re.sub(r"<[^>]+>", " ", c)).split() for c in
             re.findall(r"<td[^>]*>(.*?)</td>", match.group(2), re.S)]
    return match.group(1), [" ".join(words) for words in found]


def page_with_controller(tmp_path):
    """A page whose controller has broker-a (1 master, 2 in sync) and broker-b (1 master)."""
    svc = make(tmp_path)
    h = ControllerHarness()
    svc.page.resource.page.controller = h.controller
    a1, a2 = FakeBroker(h, "broker-a", 30911), FakeBroker(h, "broker-a", 30921)
    b1 = FakeBroker(h, "broker-b", 30931)
    for broker in (a1, b1):
        broker.start()
        broker.elect()
    a2.start()
    a1.alter_sync_state_set({1, 2}, 1, master_epoch=1)
    a2.beat(epoch=1, max_offset=2048)
    return svc, h, (a1, a2, b1)


def test_groups_show_master_epochs_in_sync_set_and_members(tmp_path):
    svc, h, _ = page_with_controller(tmp_path)
    status, _, text = get(svc, "/")
    assert status == 200 and '<section id="s-controller"><h2>Controller</h2>' in text
    role = html.unescape(re.sub("<[^>]+>", "", re.search(r'<p id="controller-role">(.*?)</p>', text).group(1)))
    assert role == "Group group1 · this controller n0 is leader · leader n0 (127.0.0.1:9878) · term 0 · 6 events " \
                   "applied (memory)"
    assert cells(text, "broker-a") == ("has-master", [
        "DefaultCluster", "broker-a", "1 (127.0.0.1:30911)", "1", "{1, 2}", "2",
        "1 127.0.0.1:30911: master, in sync, alive 2 127.0.0.1:30921: replica, in sync, alive, epoch 1, "
        "offset 2048"])
    assert cells(text, "broker-b")[1][2:5] == ["1 (127.0.0.1:30931)", "1", "{1}"]


def test_a_group_without_a_master_comes_first_and_says_for_how_long(tmp_path):
    svc, h, (a1, a2, b1) = page_with_controller(tmp_path)
    b1.die()                       # nobody else in broker-b: no master
    h.clock.advance(5)           # within the others' heartbeat timeout (10 s)
    _, _, text = get(svc, "/fragment/controller")
    assert text.index('data-group="broker-b"') < text.index('data-group="broker-a"')
    row_class, row = cells(text, "broker-b")
    assert row_class == "no-master"
    assert row[2] == "none, without a live master for 5 s"
    assert row[6] == "1 127.0.0.1:30931: replica, in sync, dead"
    a1.die()                       # 2 is in sync and alive: it takes over
    text = get(svc, "/fragment/controller")[2]
    row_class, row = cells(text, "broker-a")
    assert row_class == "has-master" and row[2:4] == ["2 (127.0.0.1:30921)", "2"]
    assert "elections: 3 new master, 0 kept the master, 1 without a master" in html.unescape(text)


def test_search_and_pages_of_groups(tmp_path):
    svc, h, _ = page_with_controller(tmp_path)
    _, _, text = get(svc, "/fragment/controller?cq=30931")
    assert cells(text, "broker-b") is not None and cells(text, "broker-a") is None
    for i in range(60):
        FakeBroker(h, "group-%02d" % i, 31000 + i).start()
    _, _, text = get(svc, "/fragment/controller?cq=group-")
    assert len(re.findall(r'data-group="group-', text)) == 50 and "62 broker groups" not in text
    assert "60 broker groups, page 1 of 2" in text
    _, _, text = get(svc, "/fragment/controller?cq=group-&cp=2")
    assert len(re.findall(r'data-group="group-', text)) == 10


def test_the_embedded_controller_is_on_the_page_and_none_without_it(tmp_path):
    svc = make(tmp_path / "on", enableControllerInNamesrv="true", controllerDLegerGroup="g",
               controllerDLegerSelfId="n0", controllerDLegerPeers="n0-127.0.0.1:%d" % free_port(),
               controllerStorePath=str(tmp_path / "controller"))
    assert svc.page.resource.page.controller is svc.controller.controller
    _, _, text = get(svc, "/")
    assert '<section id="s-controller">' in text and "no broker group" in text
    plain = make(tmp_path / "off")
    _, _, text = get(plain, "/")
    assert "s-controller" not in text
    assert "No controller runs here" in get(plain, "/fragment/controller")[2]


def test_recent_events_show_the_controller_s_failovers():
    from twisted.internet import task
    from namesrv.status.recent import RecentEvents
    recent = RecentEvents(task.Clock())
    recent.event("controller_master_inactive", {"brokerName": "broker-a", "masterBrokerId": 1})
    recent.event("controller_master_elected", {"brokerName": "broker-a", "masterBrokerId": 2, "masterEpoch": 2})
    recent.event("broker_heartbeat_noise", {})
    recent.event("route_master_changed", {"brokerName": "broker-a", "masterAddress": "127.0.0.1:10921",
                                          "masterEpoch": 2, "trigger": "controller"})
    assert [entry[2] for entry in recent.latest()] == ["route_master_changed", "controller_master_elected",
                                                       "controller_master_inactive"]


def test_raft_members_say_whether_they_are_authenticated_and_what_was_refused():
    from namesrv.status.controller import _members_line
    status = {"controller": {"mode": "raft", "authenticated": True, "leaseSeconds": 0.31, "refusedLinks": 3,
                             "dropped": {"stale_ack": 2, "bad": 0}}}
    line = html.unescape(re.sub(r"<[^>]+>", "", _members_line(status)))
    assert "authenticated by the group's secret" in line and "lease 0.31 s" in line
    assert "3 member connections refused" in line and "2 stale ack" in line
    status["controller"]["authenticated"] = False
    assert "member authentication disabled" in _members_line(status)
    assert _members_line({"controller": {"mode": "single"}}) == ""


def test_a_peer_without_a_link_is_marked_dead_and_counted():
    status = {"group": "g", "selfId": "n0", "isLeader": True, "groups": [],
              "controller": {"mode": "raft", "role": "leader", "leaderId": "n0", "connectedPeers": ["n1"],
                             "authenticated": True,
                             "peers": {"n0": "10.0.0.1:9878", "n1": "10.0.0.2:9878", "n2": "10.0.0.3:9878"}}}
    text = section(status, {})
    peers = re.findall(r'<span class="peer (\w+)" data-peer="(\w+)">([^<]*)</span>', text)
    assert peers == [("self", "n0", "n0=10.0.0.1:9878 (this one)"), ("connected", "n1", "n1=10.0.0.2:9878 (connected)"),
                     ("dead", "n2", "n2=10.0.0.3:9878 (not connected)")]
    assert '<span class="badge dead">1 of 2 peers not connected</span>' in text
    status["controller"]["connectedPeers"] = ["n1", "n2"]
    assert "badge dead" not in section(status, {}) and "peer dead" not in section(status, {})
def test_the_members_table_shows_roles_lag_last_contact_and_a_transfer():
    from namesrv.status.controller import _members_table
    status = {"controller": {"mode": "raft", "configuration": {"epoch": 1, "fenced": ["n1"]},
                             "transfer": {"target": "n2", "phase": "catching up"},
                             "store": {"journalBytes": 1200, "snapshotBytes": 800, "maxBytes": 67108864},
                             "members": [
                                 {"id": "n0", "address": "10.0.0.1:9878", "role": "voter", "leader": True, "self": True,
                                  "connected": True, "lag": 0, "lastContactSeconds": 0.0},
                                 {"id": "n3", "address": "10.0.0.4:9878", "role": "learner", "leader": False,
                                  "connected": False, "lag": 42, "lastContactSeconds": 3.5}]}}
    text = html.unescape(re.sub(r"<[^>]+>", " ", _members_table(status)))
    words = " ".join(text.split())
    assert "n3 10.0.0.4:9878 learner 42 3.50 s not linked" in words
    assert "n0 10.0.0.1:9878 voter leader 0 0.00 s this one" in words
    assert "group epoch 1" in words and "fenced: n1" in words and "handing leadership over to n2" in words
    assert "journal 1200 B, snapshot 800 B of 67108864 B" in words
    assert _members_table({"controller": {"mode": "single"}}) == ""
