"""The AnswerCache: replayed answers are byte-identical to fresh ones, and never stale.

The whole service in-process (no listening port): a RemotingProtocol from the service's own
factory on a StringTransport, task.Clock for time.
"""

import json
import struct

import pytest

from namesrv.protocol.answercache import KEY_OVERHEAD
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode, SerializeType
from namesrv.protocol.command import make_request
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from namesrv.interfaces import IBulkRequestObserver, IRequestObserver
from namesrv.security.signature import sign_request_ext
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport
from zope.interface import implementer
from tests.answercache import _raw, answers, ask, connect, register, route, server  # noqa: F401 (fixtures)
from tests.brokers import register_request


@implementer(IRequestObserver)
class Recorder:
    def __init__(self):
        self.requests = []

    def record_request(self, code, response_code, micros, peer):
        self.requests.append((code, response_code, peer))


def test_a_repeated_route_read_is_replayed_byte_for_byte(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    cache = svc.answer_cache
    ((first_bytes, first),) = ask(proto, transport, route("T1", 7))
    assert first.code == ResponseCode.SUCCESS and cache.hits == 0 and len(cache) == 1
    ((again_bytes, again),) = ask(proto, transport, route("T1", 8))
    assert cache.hits == 1
    assert again.opaque == 8 and again.body == first.body
    assert again_bytes == encode_frame(first.with_changes(opaque=8))
    for opaque, hits in ((123456, 1), (654321, 2)):      # more digits: one more slow answer, then hits
        ((longer_bytes, _),) = ask(proto, transport, route("T1", opaque))
        assert longer_bytes == encode_frame(first.with_changes(opaque=opaque)) and cache.hits == hits


def test_pipelined_reads_get_every_opaque_back(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1), route("T2", 2))
    first = [-5, 0, 9, 2**31 - 1, -2**31, 77, 1000000000]
    then = [-6, 3, 4, 2**31 - 2, -2**31 + 1, 78, 1999999999]
    for opaques in (first, then):
        got = ask(proto, transport, *[route("T1" if i % 2 else "T2", o) for i, o in enumerate(opaques)])
        assert [a.opaque for _, a in got] == opaques
        assert [json.loads(a.body)["queueDatas"][0]["brokerName"] for _, a in got] == ["b1"] * len(opaques)
    assert svc.answer_cache.hits >= len(then)


def test_a_route_change_is_seen_at_once(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ((_, before),) = ask(proto, transport, route("T1", 1))
    register(proto, transport, broker="b2", addr="127.0.0.2:10911")
    ((_, after),) = ask(proto, transport, route("T1", 2))
    names = sorted(q["brokerName"] for q in json.loads(after.body)["queueDatas"])
    assert names == ["b1", "b2"] and before.body != after.body


def test_an_unchanged_heartbeat_keeps_the_cache(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1))
    invalidations = svc.answer_cache.invalidations
    register(proto, transport)           # the same topics and dataVersion
    ask(proto, transport, route("T1", 2))
    assert svc.answer_cache.invalidations == invalidations and svc.answer_cache.hits == 1


def test_topic_not_exist_is_cached_until_the_topic_appears(server):
    svc = server()
    proto, transport = connect(svc)
    ((_, missing),) = ask(proto, transport, route("Later", 1))
    ((_, still),) = ask(proto, transport, route("Later", 2))
    assert missing.code == still.code == ResponseCode.TOPIC_NOT_EXIST and svc.answer_cache.hits == 1
    assert still.remark == missing.remark and "Later" in still.remark
    register(proto, transport, topics=("Later", "Other"))
    ((_, found),) = ask(proto, transport, route("Later", 3))
    assert found.code == ResponseCode.SUCCESS


def test_a_broker_going_away_is_seen_once_its_close_is_handled(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1))
    reader, reader_transport = connect(svc)
    ask(reader, reader_transport, route("T1", 2))
    proto.connectionLost(None)           # the broker's channel closes: housekeeping unregisters it
    proto._reactor.advance(0)            # ...in the next turn, with every close of this one
    ((_, gone),) = ask(reader, reader_transport, route("T1", 3))
    assert gone.code == ResponseCode.TOPIC_NOT_EXIST


def test_kv_and_config_changes_invalidate(server):
    svc = server(orderMessageEnable="true")
    proto, transport = connect(svc)
    register(proto, transport)
    ((_, plain),) = ask(proto, transport, route("T1", 1))
    assert "orderTopicConf" not in json.loads(plain.body)
    svc.kv.put(ORDER_TOPIC_CONFIG, "T1", "b1:4")
    ((_, ordered),) = ask(proto, transport, route("T1", 2))
    assert json.loads(ordered.body)["orderTopicConf"] == "b1:4"
    svc.config.update({"orderMessageEnable": "false"})
    ((_, off),) = ask(proto, transport, route("T1", 3))
    assert "orderTopicConf" not in json.loads(off.body)


def test_rocketmq_headers_are_cached_too(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    rmq = SerializeType.ROCKETMQ
    ((first_bytes, first),) = ask(proto, transport, route("T1", 5, serialize_type=rmq))
    ((again_bytes, again),) = ask(proto, transport, route("T1", -99, serialize_type=rmq))
    assert svc.answer_cache.hits == 1 and again.opaque == -99
    assert again_bytes == encode_frame(first.with_changes(opaque=-99))


def test_json_and_rocketmq_and_versions_do_not_share_answers(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1), route("T1", 2, serialize_type=SerializeType.ROCKETMQ),
        route("T1", 3, version=500))
    assert svc.answer_cache.hits == 0 and len(svc.answer_cache) == 3


def test_observers_see_cached_answers(server):
    svc = server()
    recorder = Recorder()
    svc.registry.observers.add(recorder)
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1), route("T1", 2), route("T1", 3))
    reads = [r for r in recorder.requests if r[0] == RequestCode.GET_ROUTEINFO_BY_TOPIC]
    assert len(reads) == 3 and svc.answer_cache.hits == 2
    assert {r[1] for r in reads} == {ResponseCode.SUCCESS}


HEADER = '{"code":105,"extFields":{"topic":"T1"},"flag":0,"language":"JAVA","opaque":%s,"version":399}'


@pytest.mark.parametrize("opaque_text", ["007", "-0", "99999999999", "2147483648", "1.5"])
def test_odd_opaque_literals_take_the_slow_path(server, opaque_text):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    proto.dataReceived(_raw(HEADER, "12"))
    answers(transport)
    hits = svc.answer_cache.hits
    proto.dataReceived(_raw(HEADER, opaque_text))
    assert svc.answer_cache.hits == hits            # decoded (and answered or refused) the slow way


def test_frames_with_two_opaques_or_escapes_are_not_cached(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    stored = len(svc.answer_cache)
    twice = '{"code":105,"extFields":{"opaque":"1","topic":"T1"},"flag":0,"opaque":%s,"version":399}'
    escaped = '{"code":105,"extFields":{"topic":"T\\u0031"},"flag":0,"opaque":%s,"version":399}'
    for header in (twice, escaped):
        for opaque in ("4", "5"):
            proto.dataReceived(_raw(header, opaque))
            ((_, answer),) = answers(transport)
            assert answer.code == ResponseCode.SUCCESS and answer.opaque == int(opaque)
    assert len(svc.answer_cache) == stored and svc.answer_cache.hits == 0


def test_oneway_reads_are_not_answered_from_the_cache(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1))
    assert ask(proto, transport, route("T1", 2, oneway=True)) == []
    assert svc.answer_cache.hits == 0


def test_not_ready_answers_are_not_cached(server):
    svc = server(needWaitForService="true", waitSecondsForService="45")
    proto, transport = connect(svc)
    register(proto, transport)
    ((_, early),) = ask(proto, transport, route("T1", 1))
    assert early.code == ResponseCode.SYSTEM_ERROR and len(svc.answer_cache) == 0
    svc.reactor.advance(46)
    ((_, ready),) = ask(proto, transport, route("T1", 2))
    assert ready.code == ResponseCode.SUCCESS


ACL = """
accounts:
  - {accessKey: rocketmq2, secretKey: '12345678', admin: 'true'}
users:
  - {username: reader01, password: reader-secret-1}
acls:
  - subject: User:reader01
    policies:
      - entries:
          - {resource: "*", actions: [RouteRead], sourceIps: [10.0.0.1]}
          - {resource: "Topic:T3", actions: [RouteRead], decision: Deny}
"""


def signed_route(topic, opaque, access_key="reader01", secret_key="reader-secret-1"):
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                        sign_request_ext({"topic": topic}, None, access_key, secret_key), opaque=opaque)


def connect_from(svc, host):
    proto = svc.factory.buildProtocol(None)
    transport = StringTransport(peerAddress=IPv4Address("TCP", host, 40000))
    proto.makeConnection(transport)
    return proto, transport


def test_with_acl_an_answer_is_replayed_only_to_the_same_frame_from_the_same_host(server, tmp_path):
    """The ACL check's verdict depends on the bytes and the host: a signed read is kept per host, and no
    shape answers a frame whose signature was made for another topic."""
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    svc = server(aclEnable="true", aclFile=str(acl))
    cache = svc.answer_cache
    admin, admin_transport = connect_from(svc, "10.0.0.1")
    registration = register_request("C", "b1", "127.0.0.1:10911", topics=["T1", "T2", "T3"])
    ((_, registered),) = ask(admin, admin_transport, registration.with_changes(
        ext=sign_request_ext(registration.ext, registration.body, "rocketmq2", "12345678")))
    assert registered.code == ResponseCode.SUCCESS, registered.remark
    here, transport = connect_from(svc, "10.0.0.1")
    ((first_frame, first),) = ask(here, transport, signed_route("T1", 1))
    ((second_frame, second),) = ask(here, transport, signed_route("T1", 2))
    assert first.code == second.code == ResponseCode.SUCCESS
    assert cache.hits == 1 and second_frame == first_frame.replace(b'"opaque":1,', b'"opaque":2,')
    # the same bytes from a host the reader may not read from: checked, refused
    there, there_transport = connect_from(svc, "10.0.0.2")
    ((_, refused),) = ask(there, there_transport, signed_route("T1", 3))
    assert refused.code == ResponseCode.NO_PERMISSION and cache.hits == 1
    # a signature made for T1 on a read of T2: no shape of T1's answers it
    forged = signed_route("T1", 4)
    forged.ext["topic"] = "T2"
    ((_, forged_answer),) = ask(here, transport, forged)
    assert forged_answer.code == ResponseCode.NO_PERMISSION and cache.shapes == 0
    # a topic the reader is denied, signed: refused every time
    for opaque in (5, 6):
        ((_, denied),) = ask(here, transport, signed_route("T3", opaque))
        assert denied.code == ResponseCode.NO_PERMISSION
    # new credentials empty the cache: the reader is gone, its kept answer with it
    acl.write_text(ACL.replace("reader01", "reader02"))
    assert svc.acl.store.reload()
    ((_, gone),) = ask(here, transport, signed_route("T1", 7))
    assert gone.code == ResponseCode.NO_PERMISSION and cache.hits == 1


def test_the_cache_is_bounded(server):
    svc = server(answerCacheMaxEntries="3")
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, *[route("X%d" % i, i) for i in range(10)])
    assert len(svc.answer_cache) <= 3


#: topic names a shape does not cut (a dot is not one of RocketMQ's topic characters): their answers are entries
ENTRY_TOPICS = ["S.%d" % i for i in range(40)]


def serving_entry_topics(server):
    """A server whose one broker serves ENTRY_TOPICS: (its answer cache, a client's protocol and transport)."""
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport, topics=ENTRY_TOPICS)
    return svc.answer_cache, proto, transport


def test_topics_on_the_same_brokers_share_one_body_and_the_bytes_are_bounded(server):
    cache, proto, transport = serving_entry_topics(server)
    topics = ENTRY_TOPICS
    first = ask(proto, transport, *[route(t, i) for i, t in enumerate(topics)])
    bodies = {id(entry[2]) for entry in cache._entries.values()}
    assert len(cache) == 40 and len(bodies) == 1        # one body, kept once, for forty topics
    one_entry = cache.total_bytes // 40
    cache.set_limits(1000, one_entry * 20)              # room for about twenty
    assert len(cache) <= 20 and cache.total_bytes <= one_entry * 20
    again = ask(proto, transport, *[route(t, i) for i, t in enumerate(topics)])
    assert [a.body for _, a in again] == [a.body for _, a in first]
    assert len(cache) <= 20 and cache.total_bytes <= one_entry * 20 and cache.evictions >= 2
    assert any(b"S.39" in key for key in list(cache._entries) + list(cache._older))  # the newest stay
    assert not any(b"S.0\"" in key for key in list(cache._entries) + list(cache._older))  # the oldest went
    hits = cache.hits
    ((_, answer),) = ask(proto, transport, route("S.39", 99))
    assert cache.hits == hits + 1 and answer.body == first[39][1].body


def test_an_answer_many_keys_share_is_kept_once(server):
    """Forty topics on the same brokers: forty keys, one answer (the same but for the opaque); each key after
    the first costs its own bytes and a slot, which lets a signed read of each of 100,000 topics fit."""
    cache, proto, transport = serving_entry_topics(server)
    ask(proto, transport, route(ENTRY_TOPICS[0], 10))   # opaques of two digits: answers of one length
    first = cache.total_bytes
    ask(proto, transport, *[route(topic, i) for i, topic in enumerate(ENTRY_TOPICS[1:], 11)])
    assert len(cache) == 40 and len({id(entry) for entry in cache._entries.values()}) == 1
    keys = sum(len(key) for key in cache._entries)
    assert cache.total_bytes - first == keys - len(next(iter(cache._entries))) + 39 * KEY_OVERHEAD


def test_an_answer_asked_again_survives_its_generation(server):
    cache, proto, transport = serving_entry_topics(server)
    topics = ENTRY_TOPICS
    ask(proto, transport, route("S.0", 1))
    first = cache.total_bytes
    ask(proto, transport, route("S.1", 2))
    one_key = cache.total_bytes - first                 # S.1's answer is S.0's: kept once
    cache.set_limits(1000, (first + 5 * one_key) * 2)   # generations of about six
    for i, topic in enumerate(topics[2:], 3):
        ask(proto, transport, route(topic, i), route("S.0", 100 + i))   # S.0 is asked all along
    hits = cache.hits
    ask(proto, transport, route("S.0", 999))
    assert cache.hits == hits + 1 and cache.evictions >= 3


def test_limits_follow_the_configuration(server):
    svc = server()
    svc.config.update({"answerCacheMaxBytes": "1000", "routeBodyCacheMaxBytes": "2000"})
    assert svc.answer_cache.max_bytes == 1000 and svc.routes.body_cache.max_bytes == 2000


def test_switched_off_by_property(server):
    svc = server(answerCacheEnable="false")
    proto, transport = connect(svc)
    register(proto, transport)
    ((_, a),), ((_, b),) = ask(proto, transport, route("T1", 1)), ask(proto, transport, route("T1", 2))
    assert svc.answer_cache is None and a.body == b.body


def test_cluster_info_is_cached_and_follows_registrations(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    info = make_request(RequestCode.GET_BROKER_CLUSTER_INFO)
    ((_, one),) = ask(proto, transport, info)
    register(proto, transport, broker="b2", addr="127.0.0.2:10911")
    ((_, two),) = ask(proto, transport, info.with_changes(opaque=5))
    assert b'"b2"' not in one.body and b'"clusterAddrTable":{"C":["b1","b2"]}' in two.body


@pytest.mark.parametrize("raw", [b"", b"\x00", b"\x00\x00\x00", b"\x01\x00\x00\x00\x00\x69"])
def test_short_frames_are_refused_as_before(server, raw):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1))
    proto.dataReceived(struct.pack(">i", len(raw)) + raw)
    assert proto.closing and transport.value() == b""


def test_a_snapshot_restore_keeps_invalidating(server, tmp_path):
    from namesrv.routes.snapshot import encode_snapshot, restore_snapshot
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1))
    restore_snapshot(svc.routes, encode_snapshot(svc.routes))     # what a warm restart does
    assert len(svc.answer_cache) == 0
    ask(proto, transport, route("T1", 2))
    svc.routes.unregister_broker("C", "127.0.0.1:10911", "b1", 0)
    ((_, gone),) = ask(proto, transport, route("T1", 3))
    assert gone.code == ResponseCode.TOPIC_NOT_EXIST


def test_bulk_observers_get_one_call_per_batch(server):
    @implementer(IBulkRequestObserver)
    class Bulk(Recorder):
        def record_requests(self, code, response_code, count, micros, peer):
            self.requests.append((code, response_code, count))

    svc = server()
    bulk = Bulk()
    svc.registry.observers.add(bulk)
    proto, transport = connect(svc)
    register(proto, transport)
    ask(proto, transport, route("T1", 1))
    ask(proto, transport, route("T1", 2), route("T1", 3), route("T1", 4))
    assert (RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.SUCCESS, 3) in bulk.requests


def test_a_random_workload_answers_exactly_as_without_the_cache(server, tmp_path):
    """Random reads (both header types, odd opaques) between registrations, expiries and config
    changes: every answer byte-identical to a server without the cache."""
    import random
    rng = random.Random(5)
    cached, plain = server(), server(answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    topics = ["T%d" % i for i in range(6)]
    for step in range(400):
        roll = rng.random()
        if roll < 0.08:
            broker = rng.randrange(3)
            request = register_request("C", "b%d" % broker, "127.0.0.%d:10911" % (broker + 1),
                                       topics=rng.sample(topics, rng.randrange(2, 5)), counter=rng.randrange(3))
        elif roll < 0.10:
            for svc in (cached, plain):
                svc.config.update({"supportActingMaster": rng.choice(["true", "false"])})
            continue
        elif roll < 0.12:
            request = make_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": rng.choice(topics)})
        else:
            opaque = rng.choice([rng.randrange(10), rng.randrange(10**6), -rng.randrange(10**4), 2**31 - 1])
            request = route(rng.choice(topics + ["Nope"]), opaque,
                            serialize_type=rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ]))
        request.opaque = step if request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC else request.opaque
        (a,), (b,) = [ask(proto, transport, request) for proto, transport in links]
        assert a[0] == b[0], (step, request)
    assert cached.answer_cache.hits > 50
