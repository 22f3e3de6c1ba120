"""The processor registry: dispatch, fallbacks, failures, conflicts, plugin discovery."""

import sys
import types

import pytest
from twisted.internet import defer
from zope.interface import implementer

from namesrv.interfaces import IRequestPolicy
from namesrv.protocol.codes import ResponseCode
from namesrv.protocol.command import make_request
from namesrv.dispatch.registry import ProcessorConflictError, ProcessorRegistry, load_processor_factories
from tests.dropins import processor_source
from tests.fakes import FakeConnection, FakeProcessor, RecordingEventLog


def test_unknown_code_answers_not_supported_with_java_remark():
    events = RecordingEventLog()
    registry = ProcessorRegistry([], events=events)
    answer = registry.dispatch(make_request(9999, opaque=4), FakeConnection())
    assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert answer.remark == " request type 9999 not supported" and answer.opaque == 4
    assert events.requests == [(9999, 3, "127.0.0.1:5555")]


def test_oneway_unknown_code_gets_nothing():
    assert ProcessorRegistry([]).dispatch(make_request(9999, oneway=True), FakeConnection()) is None


def test_handler_value_and_deferred():
    registry = ProcessorRegistry([
        FakeProcessor("a", [1], lambda r: r.make_response(0, "sync")),
        FakeProcessor("b", [2], lambda r: defer.succeed(r.make_response(0, "async"))),
    ])
    assert registry.dispatch(make_request(1), FakeConnection()).remark == "sync"
    results = []
    registry.dispatch(make_request(2), FakeConnection()).addCallback(results.append)
    assert results[0].remark == "async"


def test_raising_handler_answers_system_error_and_goes_on():
    def boom(request):
        raise KeyError("nope")

    registry = ProcessorRegistry([FakeProcessor("a", [1], boom), FakeProcessor("b", [2], lambda r: r.make_response(0))])
    answer = registry.dispatch(make_request(1, opaque=8), FakeConnection())
    assert answer.code == ResponseCode.SYSTEM_ERROR and "KeyError" in answer.remark and answer.opaque == 8
    assert registry.dispatch(make_request(2), FakeConnection()).code == 0


def test_header_field_error_keeps_its_message():
    def needs_field(request):
        request.require("brokerName")

    answer = ProcessorRegistry([FakeProcessor("a", [1], needs_field)]).dispatch(make_request(1), FakeConnection())
    assert answer.code == 1 and answer.remark == "the custom field <brokerName> is null"


def test_failed_deferred_answers_system_error():
    registry = ProcessorRegistry([FakeProcessor("a", [1], lambda r: defer.fail(RuntimeError("disk gone")))])
    results = []
    registry.dispatch(make_request(1), FakeConnection()).addCallback(results.append)
    assert results[0].code == 1 and "disk gone" in results[0].remark


def test_rejected_request_gets_the_processor_answer():
    registry = ProcessorRegistry([FakeProcessor("a", [1], lambda r: 1 / 0, reject=(2, "busy"))])
    answer = registry.dispatch(make_request(1), FakeConnection())
    assert (answer.code, answer.remark) == (2, "busy")


def test_two_processors_claiming_one_code_is_an_error_naming_both():
    with pytest.raises(ProcessorConflictError, match=r"105 .*'first'.*'second'"):
        ProcessorRegistry([FakeProcessor("first", [105], None), FakeProcessor("second", [104, 105], None)])


def test_builtin_dropins_are_found():
    names = [factory.name for factory in load_processor_factories()]
    assert {"default", "kvconfig", "route"} <= set(names)


def test_third_party_processor_from_a_dropin_directory(tmp_path):
    package = tmp_path / "extra_plugins"
    package.mkdir()
    source = processor_source("Echo", "echo", 7001, "return request.make_response(0, body=request.body)",
                              header="from namesrv.plugin import ProcessorPlugin")
    (package / "echo_processor.py").write_text(
        source + 'echo = ProcessorPlugin("echo", "extra_plugins.echo_processor", "Echo")\n')
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:
        import extra_plugins
        factories = load_processor_factories(extra_plugins)
        assert [f.name for f in factories] == ["echo"]
        context = types.SimpleNamespace(events=RecordingEventLog())
        registry = ProcessorRegistry([factory.build(context) for factory in factories], events=context.events)
        answer = registry.dispatch(make_request(7001, body=b"ping"), FakeConnection())
        assert answer.body == b"ping"
    finally:
        sys.path.remove(str(tmp_path))
        for name in list(sys.modules):
            if name.startswith("extra_plugins"):
                del sys.modules[name]


@implementer(IRequestPolicy)
class Policy:
    def __init__(self, refuse_codes=()):
        self.refuse_codes = set(refuse_codes)
        self.done_calls = []

    def check(self, request, connection):
        if request.code in self.refuse_codes:
            return (16, "no permission for %d" % request.code)
        return None

    def done(self, request, connection, response_code):
        self.done_calls.append((request.code, response_code))


def test_policies_refuse_before_the_processor_and_are_released():
    called = []
    first, second = Policy(), Policy(refuse_codes=[2])
    registry = ProcessorRegistry([FakeProcessor("a", [1, 2], lambda r: called.append(r.code) or r.make_response(0))],
                                 policies=[first, second])
    assert registry.dispatch(make_request(1), FakeConnection()).code == 0
    answer = registry.dispatch(make_request(2), FakeConnection())
    assert (answer.code, answer.remark) == (16, "no permission for 2") and called == [1]
    assert first.done_calls == [(1, 0), (2, 16)] and second.done_calls == [(1, 0)]


def test_policy_released_when_a_deferred_answer_fires():
    policy = Policy()
    d = defer.Deferred()
    registry = ProcessorRegistry([FakeProcessor("a", [1], lambda r: d)], policies=[policy])
    registry.dispatch(make_request(1), FakeConnection())
    assert policy.done_calls == []
    d.callback(make_request(1).make_response(0))
    assert policy.done_calls == [(1, 0)]


def test_observers_see_every_request():
    events, extra = RecordingEventLog(), RecordingEventLog()
    registry = ProcessorRegistry([], events=events, observers=[extra])
    registry.dispatch(make_request(5), FakeConnection())
    assert events.requests == extra.requests == [(5, 3, "127.0.0.1:5555")]
