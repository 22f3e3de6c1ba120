"""An identical REGISTER_BROKER, with nothing of its broker group changed since, only refreshes liveness.

Every answer and table state must be what the full path would give; only the body is not decoded.
"""

import random
import zlib

import pytest

from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.routes.bodies import decode
from processors.route import FINGERPRINT_HEAD_BYTES
from tests.brokers import register_request, route_request
from tests.fakes import FakeConnection
from tests.processors.world import req, world  # noqa: F401 (fixture)
from tests.vectors import vector


C = RequestCode
TOPICS = ["A", "B", "C"]


@pytest.fixture
def no_decode(monkeypatch):
    """Make any further body decode fail loudly: the shortcut must not need it."""
    def refuse(*args, **kwargs):
        raise AssertionError("the body was decoded")

    def arm():
        monkeypatch.setattr(decode, "decode_register_broker_body", refuse)
    return arm


def master(**kw):
    return register_request("C", "broker-a", "127.0.0.1:10911", topics=TOPICS, ha_addr="127.0.0.1:10912", **kw)


def slave(**kw):
    return register_request("C", "broker-a", "127.0.0.1:10921", broker_id=1, topics=TOPICS, **kw)


def test_an_identical_heartbeat_is_not_decoded_and_refreshes_liveness(world, no_decode):
    first = world.call(master())
    world.clock.advance(30)
    no_decode()
    again = world.call(master(opaque=9))
    assert (again.code, again.ext, again.body) == (first.code, first.ext, first.body)
    assert world.processor.unchanged.skipped == 1
    live = world.routes.broker_live_table[("C", "127.0.0.1:10911")]
    assert live.last_update == world.clock.seconds() and live.connection is world.conn
    beats = world.events.named("broker_heartbeat")
    assert beats[-1]["topics"] == 3 and beats[-1]["changed"] is False
    assert beats[-1]["dataVersion"] == world.events.named("broker_registered")[0]["dataVersion"]


def test_the_slave_still_learns_its_master(world, no_decode):
    world.call(master())
    full = world.call(slave(), FakeConnection(connection_id=2))
    no_decode()
    quick = world.call(slave(), FakeConnection(connection_id=2))
    assert quick.ext == full.ext == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}
    assert world.processor.unchanged.skipped == 1


def test_a_deleted_topic_comes_back_with_the_next_heartbeat(world):
    world.call(master())
    world.call(master())
    assert world.processor.unchanged.skipped == 1
    assert world.call(req(C.DELETE_TOPIC_IN_NAMESRV, {"topic": "B"})).code == ResponseCode.SUCCESS
    assert world.call(route_request("B")).code == ResponseCode.TOPIC_NOT_EXIST
    world.call(master())                     # a table change since: the full path, as Java
    assert world.processor.unchanged.skipped == 1
    assert world.call(route_request("B")).code == ResponseCode.SUCCESS


def test_other_brokers_changes_do_not_matter(world):
    world.call(master())
    world.call(register_request("C", "broker-b", "127.0.0.2:10911", topics=["X", "Y", "A"]), FakeConnection(connection_id=3))
    world.call(master())
    assert world.processor.unchanged.skipped == 1


def test_a_change_to_the_brokers_group_takes_the_full_path(world):
    world.call(master())
    world.call(slave(), FakeConnection(connection_id=2))            # the group's addresses changed
    world.call(master())
    assert world.processor.unchanged.skipped == 0
    world.call(master())
    assert world.processor.unchanged.skipped == 1


def _tables(routes):
    """Everything but liveness timestamps and connections."""
    return ({t: dict(q) for t, q in routes.topic_queue_table.items()},
            {n: (b.cluster, dict(b.broker_addrs), b.zone_name, b.enable_acting_master)
             for n, b in routes.broker_addr_table.items()},
            {c: set(n) for c, n in routes.cluster_addr_table.items()},
            {k: (v.broker_name, v.broker_id, v.data_version, v.ha_server_addr)
             for k, v in routes.broker_live_table.items()},
            {k: list(v) for k, v in routes.filter_server_table.items()},
            dict(routes.topic_queue_mapping_info_table))


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_end_as_without_the_shortcut(seed, monkeypatch):
    """The same random history on two servers, one never taking the shortcut: same answers, same tables."""
    from tests.processors.world import world as make_world
    fast, slow = next(make_world.__wrapped__()), next(make_world.__wrapped__())
    monkeypatch.setattr(slow.routes, "refresh_unchanged_registration", lambda *a, **k: None)
    rng = random.Random(seed)
    conns = {i: FakeConnection(connection_id=i) for i in range(1, 5)}
    operations = [
        lambda: (master(), conns[1]),
        lambda: (slave(), conns[2]),
        lambda: (register_request("C", "broker-a", "127.0.0.1:10921", broker_id=1, topics=TOPICS + ["Extra"]),
                 conns[2]),
        lambda: (register_request("C", "broker-b", "127.0.0.2:10911", topics=["A", "X"]), conns[3]),
        lambda: (register_request("C", "broker-b", "127.0.0.2:10911", topics=["A", "X"], counter=2), conns[3]),
        lambda: (req(C.DELETE_TOPIC_IN_NAMESRV, {"topic": rng.choice(["A", "B", "X", "Extra"])}), conns[4]),
        lambda: (req(C.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": rng.choice(["broker-a", "broker-b"])}), conns[4]),
        lambda: (req(C.ADD_WRITE_PERM_OF_BROKER, {"brokerName": rng.choice(["broker-a", "broker-b"])}), conns[4]),
        lambda: (req(C.UNREGISTER_BROKER, {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10921",
                                           "clusterName": "C", "brokerId": "1"}), conns[4]),
        lambda: (req(C.UNREGISTER_BROKER, {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
                                           "clusterName": "C", "brokerId": "0"}), conns[4]),
    ]
    for step in range(60):
        request, conn = rng.choice(operations + [operations[0]] * 4)()   # mostly heartbeats of the master
        answers = [w.processor.process_request(request, conn) for w in (fast, slow)]
        assert (answers[0].code, answers[0].ext, answers[0].body) == (answers[1].code, answers[1].ext,
                                                                      answers[1].body), (seed, step)
        assert _tables(fast.routes) == _tables(slow.routes), (seed, step)
        for topic in ("A", "B", "C", "X", "Extra"):
            assert fast.routes.route_body(topic, False, None, False) == \
                slow.routes.route_body(topic, False, None, False), (seed, step, topic)
    assert fast.processor.unchanged.skipped > 0


@pytest.mark.parametrize("change", [
    dict(counter=2),                                        # a new dataVersion
    dict(extra_ext={"heartbeatTimeoutMillis": "60000"}),    # a header field
    dict(compressed=True),                                  # the same topics, encoded differently
])
def test_a_different_registration_is_decoded(world, change):
    world.call(master())
    world.call(master(**change))
    assert world.processor.unchanged.skipped == 0


def test_a_body_that_fails_its_crc_is_refused_as_by_java_not_taken_for_the_last_one(world):
    """The shortcut knows a body by the header's checked CRC: the same header with other bytes is a CRC error."""
    world.call(master())
    corrupt = master()
    corrupt.body = corrupt.body.replace(b'"A"', b'"Z"')        # same length, same header
    answer = world.call(corrupt)
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("crc32 not match")
    assert world.processor.unchanged.skipped == 0


def test_a_body_without_a_crc_is_compared_whole(world):
    """bodyCrc32 0 (not checked): another body of the same length and header is decoded, not skipped."""
    first = master(extra_ext={"bodyCrc32": "0"})
    world.call(first)
    other = master(extra_ext={"bodyCrc32": "0"})
    other.body = other.body.replace(b'"C"', b'"D"')
    assert len(other.body) == len(first.body)
    world.call(other)
    assert world.processor.unchanged.skipped == 0
    assert world.call(route_request("D")).code == ResponseCode.SUCCESS
    world.call(master(extra_ext={"bodyCrc32": "0"}))
    world.call(master(extra_ext={"bodyCrc32": "0"}))
    assert world.processor.unchanged.skipped == 1


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table.append(c)
    return table


def forge_crc_tail(prefix, target):
    """Four bytes that give ``prefix + them`` the zlib CRC-32 ``target`` (CRC-32 is linear: the register
    is walked back four steps from the wanted end, then forward from ``prefix``'s)."""
    table = _crc_table()
    by_top = {entry >> 24: i for i, entry in enumerate(table)}
    register, indexes = target ^ 0xFFFFFFFF, []
    for _ in range(4):
        i = by_top[register >> 24]
        indexes.append(i)
        register = ((register ^ table[i]) << 8) & 0xFFFFFFFF
    register, tail = zlib.crc32(prefix) ^ 0xFFFFFFFF, bytearray()
    for i in reversed(indexes):
        tail.append((register ^ i) & 0xFF)
        register = (register >> 8) ^ table[i]
    return bytes(tail)


def test_a_new_data_version_is_never_taken_for_the_last_registration(world):
    """Known by its checked CRC, length and head: a body with another dataVersion but the same CRC and
    length (forged here) still takes the full path, as Java applies a table whose dataVersion moved."""
    first = master()
    world.call(first)
    changed = first.body.replace(b'"counter":1', b'"counter":2', 1)
    assert changed != first.body
    changed = changed[:-4] + forge_crc_tail(changed[:-4], zlib.crc32(first.body))
    assert (zlib.crc32(changed), len(changed)) == (zlib.crc32(first.body), len(first.body))
    again = master()
    again.body = changed                      # the same header: bodyCrc32 matches the forged body
    answer = world.call(again)
    assert world.processor.unchanged.skipped == 0
    assert answer.code == ResponseCode.SYSTEM_ERROR   # decoded, and its forged tail is no JSON


@pytest.mark.parametrize("name", ["req_register_plain_json", "req_register_slave_rocketmq"])
def test_a_java_brokers_data_version_is_within_the_fingerprinted_head(name):
    """Captured from a Java broker: fastjson writes filterServerList, then the wrapper's dataVersion first."""
    body = decode_frame(vector(name)[4:]).body
    start = body.index(b'"dataVersion":{')
    assert body.index(b"}", start) < FINGERPRINT_HEAD_BYTES


def test_a_new_connection_is_bound(world):
    world.call(master())
    other = FakeConnection(connection_id=7)
    world.call(master(), other)
    assert world.processor.unchanged.skipped == 1
    assert world.routes.broker_live_table[("C", "127.0.0.1:10911")].connection is other


def test_an_expired_broker_registers_in_full(world):
    world.call(master())
    world.clock.advance(121)
    world.routes.scan_not_active_brokers()
    assert world.call(route_request("A")).code == ResponseCode.TOPIC_NOT_EXIST
    world.call(master())
    assert world.processor.unchanged.skipped == 0
    assert world.call(route_request("A")).code == ResponseCode.SUCCESS


def test_a_refused_body_is_never_remembered(world):
    bad = master()
    bad.body = b"{not json"
    bad.ext["bodyCrc32"] = "0"
    for _ in range(2):
        assert world.call(bad).code == ResponseCode.SYSTEM_ERROR
    assert world.processor.unchanged.skipped == 0


def test_forgotten_brokers_do_not_pile_up(world):
    world.call(master())
    remembered = world.processor.unchanged.applied
    for i in range(1100):
        remembered[("gone", "127.0.9.%d:1" % i)] = object()
    world.call(register_request("C", "broker-z", "127.0.0.9:10911", topics=["Z1", "Z2"]), FakeConnection(connection_id=9))
    assert set(remembered) == {("C", "127.0.0.1:10911"), ("C", "127.0.0.9:10911")}


def test_a_takeover_carries_the_shortcut_to_the_new_process(world, no_decode):
    from types import SimpleNamespace
    import msgpack
    from namesrv.context import NamesrvContext
    from namesrv.routes import RouteInfoManager
    from namesrv.routes.snapshot import encode_snapshot, restore_snapshot
    from processors.route import RouteProcessor
    from tests.config_for import make_config
    from tests.processors.world import FakeKV
    world.call(master())
    world.call(slave())
    world.call(master(opaque=3))        # the slave joined its group since: applied again, valid from now on
    world.call(register_request("C", "broker-b", "127.0.0.1:10931", topics=["B"]))
    world.call(register_request("C", "broker-b", "127.0.0.1:10931", topics=["B", "X"], counter=2))   # changed
    rows = msgpack.unpackb(msgpack.packb(world.routes.unchanged.export()), raw=False)   # as the message carries it
    assert sorted(row[1] for row in rows) == ["127.0.0.1:10911", "127.0.0.1:10921", "127.0.0.1:10931"]
    new_routes = RouteInfoManager(clock=world.clock, events=world.events)
    restore_snapshot(new_routes, encode_snapshot(world.routes))
    new_routes.unchanged.adopt(rows + [["C", "127.0.0.9:1", b"x" * 32, 1, {}], ["garbage"]])
    context = NamesrvContext(config=make_config(), routes=new_routes, kv=FakeKV(), reactor=world.clock,
                             events=world.events)
    new = SimpleNamespace(processor=RouteProcessor(context))
    no_decode()
    for request in (master(opaque=7), slave(opaque=8)):
        assert new.processor.process_request(request, FakeConnection()).code == ResponseCode.SUCCESS
    assert new.processor.unchanged.skipped == 2
    assert len(new_routes.unchanged.applied) == 3     # the unknown broker and the garbage row were ignored
