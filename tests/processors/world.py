"""A route processor over a fresh service, and its request helper, for the processor tests."""

from types import SimpleNamespace

import pytest
from twisted.internet.task import Clock

from namesrv.codec import fastjson
from namesrv.context import NamesrvContext
from namesrv.protocol.command import make_request
from namesrv.routes import RouteInfoManager
from processors.route import RouteProcessor
from tests.config_for import make_config
from tests.fakes import FakeConnection, RecordingEventLog


class FakeKV:
    def __init__(self):
        self.table = {}

    def get(self, namespace, key):
        return self.table.get(namespace, {}).get(key)

    def kv_table_body(self, namespace):
        if namespace not in self.table:
            return None
        return fastjson.dumps_plain({"table": self.table[namespace]}).encode()


def route_world(**processor_options):
    """A route processor over fresh tables on a task.Clock at t=1000, its event log and a connection."""
    clock = Clock()
    clock.advance(1000)
    events = RecordingEventLog()
    routes = RouteInfoManager(clock=clock, events=events)
    context = NamesrvContext(config=make_config(), routes=routes, kv=FakeKV(), reactor=clock, events=events)
    world = SimpleNamespace(clock=clock, events=events, routes=routes, context=context,
                            processor=RouteProcessor(context, **processor_options), conn=FakeConnection())
    world.call = lambda request, conn=None: world.processor.process_request(request, conn or world.conn)
    return world


@pytest.fixture
def world():
    world = route_world()
    yield world
    world.routes.check_invariants()


def req(code, ext=None, body=None, **kw):
    return make_request(code, ext, body=body, **kw)
