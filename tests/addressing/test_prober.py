"""The prober on a task.Clock, with a probe whose answers the test decides: what leaves the list, when, what is said."""

from twisted.internet import defer, task
from twisted.internet.error import ConnectionRefusedError
from twisted.logger import capturedLogs, formatEvent

from namesrv.addressing.liveness import REMOVED, RESTORED, AddressLiveness
from namesrv.addressing.prober import PROBE_CODE, AddressProber
from namesrv.protocol.codes import RequestCode

A, B = "127.0.0.1:9876", "127.0.0.1:9877"


class Peers:
    """A probe: ``up`` peers answer at once, ``hung`` ones never (the prober's timeout is the probe's),
    the others refuse the connection."""

    def __init__(self, clock):
        self.clock = clock
        self.up = {A, B}
        self.hung = set()
        self.asked = []

    def probe(self, reactor, host, port, timeout, code):
        address = "%s:%d" % (host, port)
        self.asked.append((address, code, timeout))
        if address in self.hung:
            return defer.Deferred().addTimeout(timeout, self.clock)
        if address in self.up:
            return defer.succeed(0.3)
        return defer.fail(ConnectionRefusedError("111: Connection refused"))


def started(down_after=5.0, up_after=2, interval=2.0, timeout=1.5):
    clock = task.Clock()
    peers = Peers(clock)
    liveness = AddressLiveness((A, B), clock.seconds(), down_after, up_after)
    prober = AddressProber(liveness, clock, clock, interval, timeout, probe=peers.probe)
    changes = []
    prober.listeners.append(lambda address, change, book: changes.append((clock.seconds(), address, change)))
    prober.startService()
    return clock, peers, prober, changes


def advance(clock, seconds, step=0.25):
    for _ in range(int(round(seconds / step))):
        clock.advance(step)


def test_every_listed_server_is_probed_each_interval_with_a_small_real_request():
    clock, peers, prober, _ = started()
    assert PROBE_CODE == RequestCode.GET_NAMESRV_CONFIG
    assert peers.asked == [(A, PROBE_CODE, 1.5), (B, PROBE_CODE, 1.5)]
    advance(clock, 4.0)
    assert len(peers.asked) == 6
    prober.stopService()
    advance(clock, 10.0)
    assert len(peers.asked) == 6


def test_a_dead_server_leaves_the_list_within_down_after_and_one_interval_and_is_logged():
    clock, peers, prober, changes = started()
    advance(clock, 10.0)
    assert changes == [] and prober.liveness.text == A + ";" + B
    with capturedLogs() as events:
        peers.up.discard(B)                          # dies at t=10, just after its last answer
        advance(clock, 8.0)
    (when, address, change), = changes
    assert address == B and change == REMOVED and 10.0 + 5.0 <= when <= 10.0 + 5.0 + 2.0
    assert prober.liveness.text == A
    (line,) = [formatEvent(e) for e in events if "left the address list" in formatEvent(e)]
    assert "127.0.0.1:9877" in line and "Connection refused" in line and "serving 127.0.0.1:9876" in line


def test_a_hung_server_leaves_once_its_probes_time_out():
    clock, peers, prober, changes = started()
    advance(clock, 10.0)
    peers.hung.add(B)
    advance(clock, 10.0)
    (when, address, change), = changes
    assert address == B and change == REMOVED and when <= 10.0 + 5.0 + 2.0 + 1.5


def test_a_probe_still_waiting_is_not_doubled():
    clock, peers, prober, changes = started(timeout=5.0)
    peers.hung.add(B)
    advance(clock, 9.75)      # rounds at 0 (B answered), 2, 4, 6, 8: B's at 2 waits until 7, then 8
    assert [asked[0] for asked in peers.asked].count(B) == 3
    assert [asked[0] for asked in peers.asked].count(A) == 5


def test_it_returns_after_two_answers_in_a_row():
    clock, peers, prober, changes = started()
    peers.up.discard(B)
    advance(clock, 8.0)
    assert changes[-1][1:] == (B, REMOVED)
    revived = clock.seconds()
    with capturedLogs() as events:
        peers.up.add(B)
        advance(clock, 6.0)
    when, address, change = changes[-1]
    assert (address, change) == (B, RESTORED) and when - revived <= 2.0 * 2
    assert prober.liveness.text == A + ";" + B
    assert any("is back in the address list" in formatEvent(e) for e in events)


def test_when_every_server_is_silent_the_whole_list_is_served_and_said():
    clock, peers, prober, changes = started()
    with capturedLogs() as events:
        peers.up.clear()
        advance(clock, 8.0)
    assert [change for _, _, change in changes] == [REMOVED, REMOVED]
    assert prober.liveness.fallback and prober.liveness.text == A + ";" + B
    assert any("no listed name server answers" in formatEvent(e) for e in events)


def test_a_failing_listener_is_logged_and_does_not_stop_the_probes():
    clock, peers, prober, changes = started()
    prober.listeners.insert(0, lambda *args: 1 / 0)
    peers.up.discard(B)
    with capturedLogs() as events:
        advance(clock, 8.0)
    assert changes and any("listener" in formatEvent(e) for e in events)
    asked = len(peers.asked)
    advance(clock, 4.0)
    assert len(peers.asked) > asked
