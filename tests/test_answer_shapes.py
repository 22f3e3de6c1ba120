"""The AnswerCache's shapes: a route read of any topic, once one read of its shape went the slow
way, is answered from the tables' kept body, byte for byte as the slow path answers it."""

import random

from namesrv.protocol.codes import RequestCode, ResponseCode, SerializeType
from namesrv.protocol.command import make_request
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from tests.answercache import _raw, answers, ask, connect, register, route, server  # noqa: F401 (fixture)
from tests.brokers import register_request


TOPICS = ["T%d" % i for i in range(1, 10)]


def same_answers(request, *links):
    """Ask each (proto, transport) the same request; their answer bytes, which must be one."""
    got = [ask(proto, transport, request) for proto, transport in links]
    assert all(len(a) == 1 for a in got), got
    frames = {a[0][0] for a in got}
    assert len(frames) == 1, (request, got)
    return got[0][0][1]


def test_every_topic_of_one_shape_is_answered_without_the_slow_path(server):
    cached, plain = server(), server(answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    for link in links:
        register(*link, topics=TOPICS)
    cache = cached.answer_cache
    first = same_answers(route("T1", 1), *links)          # the slow way: it leaves the shape
    assert first.code == ResponseCode.SUCCESS and cache.shaped == 0 and cache.shapes == 1
    for opaque, topic in enumerate(TOPICS[1:], 2):
        answer = same_answers(route(topic, opaque), *links)
        assert answer.code == ResponseCode.SUCCESS and answer.opaque == opaque
    assert cache.shaped == len(TOPICS) - 1 and cache.hits == len(TOPICS) - 1
    assert not cache._entries and not cache._older        # nothing stored per topic


def test_an_unknown_topic_read_through_a_shape_gets_its_own_remark(server):
    cached, plain = server(), server(answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    for link in links:
        register(*link, topics=TOPICS)
    same_answers(route("T1", 1), *links)
    missing = same_answers(route("T0", 2), *links)
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST and "T0" in missing.remark
    hits = cached.answer_cache.hits
    again = same_answers(route("T0", 3), *links)           # that answer is an entry now
    assert again.remark == missing.remark and cached.answer_cache.hits == hits + 1


def test_unknown_topics_of_a_known_shape_get_their_own_remark_from_it(server):
    cached, plain = server(), server(answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    for link in links:
        register(*link, topics=["Known1", "Known2"])
    cache = cached.answer_cache
    same_answers(route("Gone01", 1), *links)                 # the slow way: it leaves the shape's other answer
    for opaque, topic in enumerate(["Gone02", "Gone03", "Known1", "Gone04"], 2):
        answer = same_answers(route(topic, opaque), *links)
        assert (answer.code == ResponseCode.SUCCESS) == (topic == "Known1")
        if topic != "Known1":
            assert topic in answer.remark
    # Known1 had no answer of its kind for this shape yet: the slow way once, then the shape has both
    assert cache.shaped == 3 and not cache._entries
    same_answers(route("Known1", 9), *links)
    assert cache.shaped == 4


def test_a_topic_named_like_a_part_of_the_header_is_not_cut_from_it(server):
    """"JSON" also appears in the header (serializeTypeCurrentRPC), "name" in the remark: the answer
    without a body cannot be kept with the topic cut out; they are answered right all the same."""
    cached, plain = server(), server(answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    for opaque, topic in enumerate(["JSON", "Zzzz", "name", "Yyyy", "JSON", "T1", "T2"], 1):
        answer = same_answers(route(topic, opaque), *links)
        assert answer.code == ResponseCode.TOPIC_NOT_EXIST and topic in answer.remark


def test_a_topic_of_another_length_or_layout_is_another_shape(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport, topics=TOPICS + ["T10", "T11"])
    cache = svc.answer_cache
    ask(proto, transport, route("T1", 1), route("T10", 2))   # the header-length word differs: two shapes
    assert cache.shapes == 2 and cache.shaped == 0
    ask(proto, transport, route("T11", 3), route("T2", 4))
    assert cache.shaped == 2
    other_layout = '{"code":105,"extFields":{"a":"b","topic":"%s"},"flag":0,"opaque":%%s,"version":399}'
    proto.dataReceived(_raw(other_layout % "T3", "5"))
    proto.dataReceived(_raw(other_layout % "T4", "6"))
    got = answers(transport)
    assert [a.opaque for _, a in got] == [5, 6] and {a.code for _, a in got} == {ResponseCode.SUCCESS}
    assert cache.shapes == 3 and cache.shaped == 3


def test_values_a_shape_does_not_cut_take_the_entries(server):
    svc = server()
    proto, transport = connect(svc)
    register(proto, transport, topics=["S.1", "S.2", "T1"])
    cache = svc.answer_cache
    ask(proto, transport, route("S.1", 1), route("S.2", 2), route("S.1", 3))
    assert cache.shapes == 0 and cache.shaped == 0 and cache.hits == 1
    escaped = '{"code":105,"extFields":{"topic":"T\\u0031"},"flag":0,"opaque":%s,"version":399}'
    for opaque in ("4", "5"):
        proto.dataReceived(_raw(escaped, opaque))
    got = answers(transport)
    assert [a.code for _, a in got][-2:] == [ResponseCode.SUCCESS] * 2
    assert cache.shapes == 0


def test_a_route_change_is_seen_through_the_shapes(server):
    cached, plain = server(), server(answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    for link in links:
        register(*link, topics=TOPICS)
    for opaque, topic in enumerate(TOPICS, 1):
        same_answers(route(topic, opaque), *links)
    for link in links:                                     # b2 takes T3 and T4 too
        register(*link, topics=["T3", "T4"], broker="b2", addr="127.0.0.2:10911")
    for opaque, topic in enumerate(TOPICS, 20):
        answer = same_answers(route(topic, opaque), *links)
        assert (b'"b2"' in answer.body) == (topic in ("T3", "T4"))
    assert cached.answer_cache.shaped >= len(TOPICS) * 2 - 2


def test_a_random_workload_of_many_shapes_answers_as_without_the_cache(server):
    """Reads of topics of several lengths and characters, zone reads, standard-JSON flags and
    versions, between registrations, deletions, ORDER_TOPIC_CONFIG changes and config changes."""
    rng = random.Random(11)
    cached, plain = server(orderMessageEnable="true"), server(orderMessageEnable="true", answerCacheEnable="false")
    links = [connect(cached), connect(plain)]
    topics = ["T1", "T2", "Topic33", "Topic44", "%RETRY%g1", "a-b_c|d", "Nope", "S.1", "Nope2", "Gone1", "JSON", "See",
              "JAVA", "0", "name"]
    for step in range(1500):
        roll = rng.random()
        if roll < 0.015:
            broker = rng.randrange(3)
            zone = rng.choice([None, "z1", "z2"])
            request = register_request("C", "b%d" % broker, "127.0.0.%d:10911" % (broker + 1),
                                       topics=rng.sample(topics[:6] + ["S.1", "JSON"], rng.randrange(2, 6)),
                                       counter=rng.randrange(3), extra_ext={"__ZONE_NAME": zone} if zone else None)
        elif roll < 0.02:
            topic, value = rng.choice(topics), "b%d:%d" % (rng.randrange(3), rng.randrange(1, 9))
            for svc in (cached, plain):
                svc.kv.put(ORDER_TOPIC_CONFIG, topic, value)
            continue
        elif roll < 0.025:
            setting = rng.choice([("supportActingMaster", rng.choice(["true", "false"])),
                                  ("orderMessageEnable", rng.choice(["true", "false"]))])
            for svc in (cached, plain):
                svc.config.update(dict([setting]))
            continue
        elif roll < 0.03:
            request = make_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": rng.choice(topics)})
        else:
            ext = {"topic": rng.choice(topics)}
            if rng.random() < 0.1:
                ext["__ZONE_MODE"] = rng.choice(["true", "false"])
                ext["__ZONE_NAME"] = rng.choice(["z1", "z2"])
            if rng.random() < 0.1:
                ext["acceptStandardJsonOnly"] = rng.choice(["true", "false"])
            request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext, version=rng.choice([399, 479, 479]),
                                   serialize_type=rng.choice([SerializeType.JSON] * 5 + [SerializeType.ROCKETMQ]))
            request.opaque = rng.choice([rng.randrange(10**5, 10**6)] * 4 + [rng.randrange(10), 2**31 - 1])
        if request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
            request.opaque = step
        same_answers(request, *links)
    assert cached.answer_cache.shaped > 300
