"""Whole-table answers never send a frame past maxFrameLength, and a large one is built over reactor
turns while registrations and route reads are answered in between (processors/sliced.py)."""

import json
from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from namesrv.context import NamesrvContext
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.routes import RouteInfoManager, topiclists
from processors.route import FRAME_OVERHEAD, RouteProcessor
from tests.brokers import register_request, route_request
from tests.config_for import make_config
from tests.fakes import FakeConnection, RecordingEventLog, one_turn
from tests.processors.test_route_processor import FakeKV

C = RequestCode
#: each list with a topicSysFlag that puts every topic in it (1: unit, 2: has unit subscription)
LISTS = [(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, 0), (C.GET_TOPICS_BY_CLUSTER, {"cluster": "C"}, 0),
         (C.GET_UNIT_TOPIC_LIST, {}, 1), (C.GET_HAS_UNIT_SUB_TOPIC_LIST, {}, 2),
         (C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, {}, 2)]


def _world(**config):
    clock = Clock()
    clock.advance(1000)
    events = RecordingEventLog()
    routes = RouteInfoManager(clock=clock, events=events)
    context = NamesrvContext(config=make_config(**config), routes=routes, kv=FakeKV(), reactor=clock,
                             events=events)
    world = SimpleNamespace(clock=clock, routes=routes, context=context, processor=RouteProcessor(context))
    world.call = lambda request, conn=None: world.processor.process_request(request, conn or FakeConnection())
    return world


def _unit_topic(name, sys_flag=3):
    return {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG", "topicName": name,
            "topicSysFlag": sys_flag, "writeQueueNums": 4}


def _fleet(world, brokers=4, topics=300, sys_flag=3):
    for b in range(brokers):
        names = [_unit_topic("Topic-%05d" % t, sys_flag) for t in range(b * topics, (b + 1) * topics)]
        assert world.call(register_request("C", "b%d" % b, "10.0.0.%d:10911" % b, topics=names)).code == 0


def _frame_length(response):
    return len(encode_frame(response))


@pytest.mark.parametrize("code,ext,sys_flag", LISTS)
def test_a_list_over_the_frame_limit_is_refused_with_a_remark_and_no_frame_passes_it(code, ext, sys_flag):
    world = _world(maxFrameLength=FRAME_OVERHEAD + 10000)
    _fleet(world, sys_flag=sys_flag)   # 1,200 topics: 16.8 KB with quotes and commas
    answer = world.call(make_request(code, dict(ext)))
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.body is None
    assert answer.remark.startswith("disable: this answer (")
    assert "more than the %d-byte frame (maxFrameLength" % (FRAME_OVERHEAD + 10000) in answer.remark
    assert "would take at least 16,815 bytes (1,200 topics), more than the" in answer.remark
    world.context.config.update({"maxFrameLength": str(FRAME_OVERHEAD + 17000)}, source="test", announce=False)
    answer = world.call(make_request(code, dict(ext)))
    assert answer.code == ResponseCode.SUCCESS and len(json.loads(answer.body)["topicList"]) == 1200
    assert _frame_length(answer) <= FRAME_OVERHEAD + 17000


def test_cluster_info_over_the_frame_limit_is_refused():
    world = _world(maxFrameLength=FRAME_OVERHEAD + 300)
    _fleet(world, brokers=4, topics=2)
    answer = world.call(make_request(C.GET_BROKER_CLUSTER_INFO, {}))
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("disable: this answer (cluster info)")
    world.context.config.update({"maxFrameLength": "16777216"}, source="test", announce=False)
    assert world.call(make_request(C.GET_BROKER_CLUSTER_INFO, {})).code == ResponseCode.SUCCESS


def test_a_large_list_is_built_over_turns_while_registrations_and_reads_are_answered(monkeypatch):
    monkeypatch.setattr(topiclists, "SLICE", 50)
    world = _world()
    world.context.scheduler.budget = lambda: 0   # one slice per reactor turn
    _fleet(world)
    first = world.call(make_request(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=1))
    second = world.call(make_request(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=2))
    assert isinstance(first, defer.Deferred) and isinstance(second, defer.Deferred)
    answers, turns = [], 0
    first.addCallback(answers.append)
    second.addCallback(answers.append)
    while not answers:
        turns += 1
        # between two slices the reactor answers everything else at once
        assert world.call(route_request("Topic-00007")).code == ResponseCode.SUCCESS
        assert world.call(register_request("C", "b0", "10.0.0.0:10911", counter=2,
                                           topics=[_unit_topic("Topic-%05d" % t) for t in range(300)])).code == 0
        one_turn(world.clock)
    assert turns > 1200 // 50   # names summed, runs sorted, merged and encoded: a slice per turn
    assert len(answers) == 2 and [a.opaque for a in answers] == [1, 2]   # one build, two answers
    assert [a.code for a in answers] == [ResponseCode.SUCCESS, ResponseCode.SUCCESS]
    assert json.loads(answers[0].body)["topicList"] == ["Topic-%05d" % t for t in range(1200)]
    assert answers[0].body is answers[1].body
    # kept: the next ask is answered at once
    assert world.call(make_request(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {})).body is answers[0].body


def test_a_table_of_one_slice_is_answered_in_the_same_turn_however_slow_the_machine():
    world = _world()
    world.context.scheduler.budget = lambda: -1   # every turn already over its budget
    _fleet(world, brokers=2, topics=5)
    for code, ext, _ in LISTS:
        answer = world.call(make_request(code, dict(ext)))
        assert not isinstance(answer, defer.Deferred) and answer.code == ResponseCode.SUCCESS


def test_a_list_that_fails_while_built_answers_system_error(monkeypatch):
    monkeypatch.setattr(topiclists, "SLICE", 2)
    world = _world()
    world.context.scheduler.budget = lambda: 0
    _fleet(world, brokers=1, topics=10)

    def broken(tables, accept):
        yield
        raise RuntimeError("broken on purpose")
    monkeypatch.setattr(topiclists, "names_by_sys_flag", broken)
    answer = world.call(make_request(C.GET_UNIT_TOPIC_LIST, {}))
    failures = []
    answer.addErrback(failures.append)
    one_turn(world.clock)
    assert failures and failures[0].check(RuntimeError)
    assert world.processor.sliced._building == {}   # the next ask builds again
