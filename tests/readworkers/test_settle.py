"""The shared counter moves when an answer leaves, not while a change's own work goes on."""

from twisted.internet import task

from namesrv.readworkers.generation import SharedGeneration
from namesrv.readworkers.pool import ReadWorkerPool
from namesrv.service import make_service
from tests.fakes import FakeConnection
from tests.brokers import register_request, route_request
from tests.test_answer_cache import Reactor
from tests.config_for import service_config as make_config


def wired_pool(tmp_path):
    """A pool wired into the service as start() wires it, without worker processes."""
    service = make_service(make_config(tmp_path), clock=task.Clock(), reactor=Reactor())
    pool = ReadWorkerPool(service, 1)
    pool.running = True
    pool.generation = SharedGeneration(str(tmp_path / "generation"), writable=True)
    service.routes.add_change_listener(pool.changed)
    service.kv.change_listeners.append(pool.changed)
    service.registry.answer_hooks.append(pool.settle)
    return service, pool


def test_a_change_is_settled_once_just_before_its_answer(tmp_path):
    service, pool = wired_pool(tmp_path)
    seen_during_change = []
    service.routes.add_change_listener(lambda: seen_during_change.append(pool.generation.read()))
    before = pool.generation.read()
    answer = service.registry.dispatch(register_request("C", "b", "127.0.0.1:10911", topics=["T1", "T2"]), FakeConnection("127.0.0.1:40000"))
    assert answer.code == 0
    assert seen_during_change == [before]            # workers still answered from their replica meanwhile
    assert pool.generation.read() == before + 1       # ...and stopped before the acknowledgement left
    service.registry.dispatch(route_request("T1"), FakeConnection("127.0.0.1:40000"))
    assert pool.generation.read() == before + 1       # a read changes nothing: no bump


def test_a_change_nobody_was_answered_about_is_settled_when_its_publication_begins(tmp_path):
    service, pool = wired_pool(tmp_path)
    before = pool.generation.read()
    service.routes.add_change_listener(lambda: None)
    pool.changed()          # e.g. the liveness scan expired a broker: no answer follows
    assert pool.generation.read() == before and pool._stale()
    pool.settle()
    assert pool.generation.read() == before + 1 and not pool._unsettled
