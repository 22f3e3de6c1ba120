"""The liveness relay's notes (relay.py): who asks, who answers, and what a note may hold."""

import pytest

from tests.controller.fakes import MemoryLog, make_controller
from tests.controller.harness import ControllerHarness, FakeBroker
from namesrv.controller.relay import LivenessRelay


class NoteLog(MemoryLog):
    """A MemoryLog that records the notes it is asked to send."""

    def __init__(self, state, leading=True):
        MemoryLog.__init__(self, state, peers={"n0": "10.0.0.1:9878", "n1": "10.0.0.2:9878",
                                               "n2": "10.0.0.3:9878"}, leading=leading)
        self.note_listeners = []
        self.notes = []

    def send_note(self, peer, body):
        self.notes.append((peer, body))
        return True


def relay_on(leading):
    """A controller whose broker-a has master 1 and slave 2 (both beating), leading or following, its relay, and
    the brokers."""
    h = ControllerHarness()
    log = NoteLog(h.state)
    h.controller.replicated = log
    relay = LivenessRelay(h.controller.heartbeats, h.state, log, h.controller.config)
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    log.leading = leading
    return h, log, relay, a1, a2


def test_a_leader_that_hears_everyone_asks_nothing_and_asks_about_those_it_does_not():
    h, log, relay, a1, a2 = relay_on(leading=True)
    h.clock.advance(1)
    a1.beat(), a2.beat()
    assert relay.tick() == 0 and log.notes == []
    h.clock.advance(2.5)
    a1.beat()                                          # a2 silent here for 3.5 s
    assert relay.tick() == 1
    assert log.notes == [("n1", {"want": [["DefaultCluster", "broker-a", 2]]}),
                         ("n2", {"want": [["DefaultCluster", "broker-a", 2]]})]


def test_a_follower_answers_with_ages_and_what_it_does_not_hear():
    h, log, relay, a1, a2 = relay_on(leading=False)
    h.clock.advance(0.25)
    relay.received("n0", {"want": [["DefaultCluster", "broker-a", 1], ["DefaultCluster", "broker-a", 7]]})
    (peer, note), = log.notes
    assert peer == "n0"
    assert note == {"beats": [["DefaultCluster", "broker-a", 1, 250, 10000, -1, -1, -1, 2 ** 31 - 1]],
                    "gone": [["DefaultCluster", "broker-a", 7]]}


def test_the_leader_keeps_what_followers_heard_and_a_gone_note_kills_at_once():
    h, log, relay, a1, a2 = relay_on(leading=True)
    heartbeats = h.controller.heartbeats
    h.clock.advance(11)                                # neither heard here for longer than its timeout
    relay.received("n1", {"beats": [["DefaultCluster", "broker-a", 1, 300, 10000, 1, 9, -1, 5]], "gone": []})
    heartbeats.scan()
    assert heartbeats.is_alive("DefaultCluster", "broker-a", 1)
    assert not heartbeats.is_alive("DefaultCluster", "broker-a", 2)
    assert heartbeats.live_info("DefaultCluster", "broker-a", 1).relayed_by == "n1"
    assert h.state.group("broker-a").master_id == 1
    relay.received("n1", {"beats": [], "gone": [["DefaultCluster", "broker-a", 1]]})
    assert not heartbeats.is_alive("DefaultCluster", "broker-a", 1)


def test_a_follower_ignores_beats_and_a_leader_ignores_questions():
    h, log, relay, _, _ = relay_on(leading=False)
    relay.received("n1", {"beats": [["DefaultCluster", "broker-a", 5, 0, 10000, 1, 1, 1, 1]], "gone": []})
    assert h.controller.heartbeats.relayed.table == {}
    h, log, relay, _, _ = relay_on(leading=True)
    relay.received("n1", {"want": [["DefaultCluster", "broker-a", 1]]})
    assert log.notes == []


@pytest.mark.parametrize("note", [
    ["want"], {"want": "broker-a"}, {"want": [["DefaultCluster", "broker-a"]]},
    {"want": [["Default Cluster", "broker-a", 1]]}, {"want": [["DefaultCluster", "broker-a", True]]},
    {"beats": [["DefaultCluster", "broker-a", 1, 0, 10000, 1, 1, 1]]},
    {"beats": [["DefaultCluster", "broker-a", 1, 0, 10000, 1, 1, 1, "5"]]},
    {"beats": [["DefaultCluster", "broker-a", 1, 0, 10000, 1, 2 ** 63, 1, 1]]},
    {"gone": [["DefaultCluster", "b" * 101, 1]]},
    {"beats": [["DefaultCluster", "broker-a", i, 0, 10000, 1, 1, 1, 1] for i in range(10001)]},
])
def test_a_note_outside_the_schema_is_dropped_and_counted(note):
    h, log, relay, _, _ = relay_on(leading=True)
    relay.received("n1", note)
    assert relay.bad == 1 and h.controller.heartbeats.relayed.table == {} and log.notes == []


def test_relays_are_forgotten_when_this_controller_stops_leading():
    controller, clock = make_controller()
    log = NoteLog(controller.state)
    controller.replicated = log
    relay = LivenessRelay(controller.heartbeats, controller.state, log, controller.config)
    controller.heartbeats.relayed_beat("n1", ("c", "b", 1), 0, 10000, 1, 1, 1, 1)
    assert controller.heartbeats.is_alive("c", "b", 1)
    relay._role_changed(False)
    assert not controller.heartbeats.is_alive("c", "b", 1)


def test_relayed_entries_are_bounded_like_direct_ones():
    h, log, relay, _, _ = relay_on(leading=True)
    h.controller.config.update({"controllerHeartbeatMaxBrokers": "3"})
    beats = [["DefaultCluster", "broker-a", i, 0, 10000, 1, 1, 1, 1] for i in range(1, 4)]
    relay.received("n1", {"beats": beats, "gone": []})
    relay.received("n1", {"beats": [["DefaultCluster", "broker-b", 9, 0, 10000, 1, 1, 1, 1]], "gone": []})
    assert len(h.controller.heartbeats.relayed) == 3 and h.controller.heartbeats.relayed.ignored == 1
    assert all(info.connection is None for heard in h.controller.heartbeats.relayed.table.values()
               for info in heard.values())
