"""The one fake-broker generator sends, for every shape a scenario uses, the bytes its brokers sent before.

Until 83901f6 four generators (bench/lib/brokers.py, fleet_brokers.py, bigfleet_brokers.py,
heartbeats.py) and the frames written out in bench/scenarios/storm.py and controller_groups.py made
them; the digests below are of their frames at the sizes given here, the opaque fixed. A figure measured
with the generator is then comparable with one measured before it.
"""

import hashlib

import pytest

from bench.lib.brokers import (CLUSTER, BandLayout, Broker, OwnTopicsLayout, SpreadLayout,
                               controller_heartbeat_request, replica_info_request)
from bench.lib.brokers.fleet import _Fleet
from bench.scenarios import cold_registration, storm
from namesrv.protocol.codec import encode_frame

OPAQUE = 1_000_000_001
BEFORE = {
    "bigfleet Fleet": "2e5406a97e831059f28948ffcbfd73d1022be4e31a78a0944c57e6a757e1cf09",
    "bigfleet LongerTopicPrefix": "b8564a39acd793ed97d769bf50661d26361ed659800187babc118526100ae923",
    "cold_registration": "8a26318e923638172447e04bdb93da73328647416a32b35ef44f37e17ccb4b18",
    "controller_groups": "d8bb862545daba3ba248bb78eed8a92eb58dd94e78987a8c8ee7439265316ae7",
    "fleet 4.9": "bd3ddd754dc66efeb2c709b0ee40ed85850139fae70cfc20801d300aa15ba52c",
    "fleet 5.x": "b3410c33232c7fbaeec55bb048125469385b1eacabfff2a9bca9066e2241a554",
    "heartbeat_stall": "867fc5c5f482765473af4909eb3e2ee23b0ab7ef483ac4495fa77dc5e3f0c993",
    "heartbeats": "26d7e1475ca174f366f69d1459860bcfa4b96f489563de1aaa8844679d94ab04",
    "storm": "084a42552ccffd531c0b8255370a817c21fcaae5210ebd211afc2c2f28239927",
}


def digest(frames):
    h = hashlib.sha256()
    for frame in frames:
        h.update(len(frame).to_bytes(8, "big"))
        h.update(frame)
    return h.hexdigest()


def sent(template_and_tail):
    template, tail = template_and_tail
    return template.frame(OPAQUE) + tail


def fleet_frames(layout, style, brokers):
    """What the fleet process queues for each broker: every kind's frames, kinds in name order."""
    fleet = _Fleet(0, "127.0.0.1", layout, style, stop=None)
    for i in range(brokers):
        frames = fleet.frames_of(i)
        yield b"".join(kind.encode() + sent(frame) for kind in sorted(frames) for frame in frames[kind])


@pytest.mark.parametrize("style, first_index", [("4.9", 100_000), ("5.x", 200_000)])
def test_the_fleet_s_bands(style, first_index):
    assert digest(fleet_frames(BandLayout(20, first_index), style, 20)) == BEFORE["fleet " + style]


@pytest.mark.parametrize("prefix", ["Fleet", "LongerTopicPrefix"])
def test_the_big_fleet_s_spread_topics(prefix):
    assert digest(fleet_frames(SpreadLayout(6, 60, 2, prefix), "4.9", 6)) == BEFORE["bigfleet " + prefix]


def test_the_mixed_load_s_heartbeating_brokers():
    """Registered once, then the same REGISTER_BROKER again every period."""
    fleet = _Fleet(0, "127.0.0.1", OwnTopicsLayout(20), "4.9", stop=None)
    frames = [sent(fleet.frames_of(i)[kind][0]) for i in range(3) for kind in ("register", "beat")]
    assert digest(frames) == BEFORE["heartbeats"]


def test_the_in_process_registrations():
    layout = OwnTopicsLayout(20)
    assert digest(encode_frame(layout.register_request(i)) for i in range(3)) == BEFORE["heartbeat_stall"]
    spread = SpreadLayout(6, 60, 2)
    assert digest(cold_registration._frame(spread, b) for b in range(6)) == BEFORE["cold_registration"]


def test_the_storm_s_registrations():
    frames = [storm.register_frame(n, ["storm-%d-topic-%d" % (n, i) for i in range(5)], r + 1)
              for n in (0, 1, 300) for r in range(2)]
    frames.append(storm.register_frame(10 ** 6, [storm.PROBE_TOPIC, storm.PROBE_TOPIC + "-2"], 1))
    assert digest(frames) == BEFORE["storm"]


def test_the_controller_mode_brokers_beats_and_polls():
    frames = []
    for group, broker_id, address in ((0, 1, "127.0.0.1:40001"), (12, 2, "127.0.0.1:40002")):
        broker = Broker("broker-%04d" % group, broker_id, address, CLUSTER)
        frames += [encode_frame(controller_heartbeat_request(broker)), encode_frame(replica_info_request(broker.name))]
    assert digest(frames) == BEFORE["controller_groups"]


def test_brokers_of_one_topic_group_share_one_body_object():
    fleet = _Fleet(0, "127.0.0.1", BandLayout(4), "4.9", stop=None)
    tails = [fleet.frames_of(i)["beat"][0][1] for i in range(BandLayout.BROKERS_PER_BAND + 1)]
    assert all(tail is tails[0] for tail in tails[:-1]) and tails[-1] is not tails[0]
    assert tails[-1] != tails[0]
