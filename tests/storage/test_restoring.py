"""A route snapshot restored while the process serves (namesrv/storage/restoring.py, snapshotfile.py): what it
does not hold yet is never answered TOPIC_NOT_EXIST before its end, writes wait for it, the file stays checked."""

from types import SimpleNamespace

from twisted.internet.task import Clock, Cooperator

from namesrv.context import NamesrvContext
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.routes import RouteInfoManager
from namesrv.routes.slicedsnapshot import write_steps
from namesrv.storage.snapshotfile import RouteSnapshotFile
from processors.route import RouteProcessor
from tests.brokers import register_request, route_request
from tests.config_for import make_config
from tests.fakes import FakeConnection, RecordingEventLog, answers_so_far
from tests.processors.world import FakeKV
from tests.routes.helpers import register

TOPICS = ["T%04d" % i for i in range(300)]


def saved(tmp_path, chunk_topics=40):
    """A snapshot file of four brokers with 150 topics each (T0000-T0299), in chunks of ``chunk_topics``."""
    routes = RouteInfoManager(clock=Clock())
    for b in range(4):
        register(routes, *TOPICS[b * 50:b * 50 + 150], name="b%d" % b, addr="127.0.0.%d:10911" % (b + 1),
                 conn=FakeConnection(), base_topic=False)
    steps = write_steps(routes, chunk_topics=chunk_topics)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            pieces = done.value
            break
    path = tmp_path / "routes.snapshot"
    path.write_bytes(b"".join(pieces))
    return str(path), routes


def restarted(tmp_path, **kwargs):
    """A process restarting on the file: its snapshot file restored up to the port listening."""
    path, original = saved(tmp_path, **kwargs)
    clock = Clock()
    events = RecordingEventLog()
    routes = RouteInfoManager(clock=clock, events=events)
    context = NamesrvContext(config=make_config(), routes=routes, kv=FakeKV(), reactor=clock, events=events)
    turns = []   # a step of the sliced jobs per "reactor turn": the test takes the turns
    cooperator = Cooperator(terminationPredicateFactory=lambda: (lambda: True), scheduler=turns.append)
    scheduler = SimpleNamespace(cooperate=lambda job, priority, name: cooperator.cooperate(job))
    snapshots = RouteSnapshotFile(path, routes, clock, scheduler)
    assert snapshots.restore()
    snapshots.release_baseline()
    snapshots.continue_restore()
    world = SimpleNamespace(clock=clock, routes=routes, processor=RouteProcessor(context), snapshots=snapshots,
                            original=original, path=path)
    world.turn = lambda: turns.pop(0)() if turns else None
    return world


def steps_until_restored(world):
    while world.routes.restoring is not None:
        world.turn()


def test_the_brokers_come_first_and_the_topics_a_chunk_per_reactor_turn(tmp_path):
    world = restarted(tmp_path)
    assert world.routes.restoring is not None
    assert world.routes.cluster_info_body() == world.original.cluster_info_body()   # before the port listens
    assert world.routes.topic_queue_table == {}
    sizes = []
    while world.routes.restoring is not None:
        world.turn()
        sizes.append(len(world.routes.topic_queue_table))
    assert len(sizes) >= 4 and sizes == sorted(sizes) and sizes[-1] == 300
    world.routes.check_invariants()
    for topic in TOPICS:
        assert world.routes.route_body(topic, True) == world.original.route_body(topic, True)


def test_a_topic_not_restored_yet_is_never_answered_topic_not_exist_before_the_end(tmp_path):
    world = restarted(tmp_path)
    world.turn()                                  # a chunk in
    restored = next(iter(world.routes.topic_queue_table))
    waiting = [t for t in TOPICS if t not in world.routes.topic_queue_table][0]
    now = answers_so_far(world.processor.process_request(route_request(restored), FakeConnection()))
    assert now[0].code == ResponseCode.SUCCESS             # restored: answered at once
    held = answers_so_far(world.processor.process_request(route_request(waiting), FakeConnection()))
    unknown = answers_so_far(world.processor.process_request(route_request("NotInTheSnapshot"), FakeConnection()))
    while world.routes.restoring is not None:
        assert held == [] and unknown == []                # not before the end, whatever the chunk
        world.turn()
    assert held[0].code == ResponseCode.SUCCESS
    assert unknown[0].code == ResponseCode.TOPIC_NOT_EXIST   # only now
    assert not now[0].cacheable                            # no shape that could answer another topic meanwhile


def test_writes_and_whole_lists_wait_for_the_end_and_then_apply(tmp_path):
    world = restarted(tmp_path)
    world.turn()
    registration = answers_so_far(world.processor.process_request(
        register_request("C", "b9", "127.0.0.9:10911", topics=["T0000", "Fresh"]), FakeConnection()))
    listing = answers_so_far(world.processor.process_request(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
                                                      FakeConnection()))
    assert registration == [] and listing == []
    steps_until_restored(world)
    assert registration[0].code == ResponseCode.SUCCESS and listing[0].code == ResponseCode.SUCCESS
    assert sorted(world.routes.topic_queue_table["T0000"]) == ["b0", "b9"] and "Fresh" in world.routes.topic_queue_table
    world.routes.check_invariants()


def test_a_change_that_cannot_wait_finishes_the_restore_first(tmp_path):
    world = restarted(tmp_path)
    world.turn()
    conn = FakeConnection()
    world.routes.register_broker("C", "127.0.0.9:10911", "b9", 0, "127.0.0.9:10911", connection=conn)   # direct
    assert world.routes.restoring is None and len(world.routes.topic_queue_table) == 300
    world.routes.check_invariants()
    world.turn()                                 # the cooperator finds nothing left
    assert len(world.routes.topic_queue_table) == 300


def test_no_snapshot_is_written_while_one_is_restored(tmp_path):
    world = restarted(tmp_path)
    before = open(world.path, "rb").read()
    assert world.snapshots.save_in_background() is None
    world.snapshots.save_now()
    assert open(world.path, "rb").read() == before
    steps_until_restored(world)
    world.routes.register_broker("C", "127.0.0.9:10911", "b9", 0, "127.0.0.9:10911", connection=FakeConnection())
    world.snapshots.save_now()                             # now it is ours to write
    assert open(world.path, "rb").read() != before


def test_a_chunk_that_fails_its_checks_leaves_empty_tables_and_frees_the_waiters(tmp_path, monkeypatch):
    from namesrv.routes import slicedsnapshot
    world = restarted(tmp_path)
    held = answers_so_far(world.processor.process_request(route_request("T0299"), FakeConnection()))
    real = slicedsnapshot.SlicedSnapshot.chunk

    def bad(self, index):
        if index == 3:
            raise slicedsnapshot.SnapshotError("a chunk this code did not write")
        return real(self, index)
    monkeypatch.setattr(slicedsnapshot.SlicedSnapshot, "chunk", bad)
    steps_until_restored(world)
    assert world.routes.topic_queue_table == {} and world.routes.broker_addr_table == {}
    assert held[0].code == ResponseCode.TOPIC_NOT_EXIST     # after the end, as with no snapshot
    world.routes.check_invariants()


def test_a_read_worker_restores_the_same_file_itself(tmp_path):
    import os
    from namesrv.readworkers.channel.generation import SharedGeneration
    from namesrv.readworkers.worker.baseline import restore_baseline
    from namesrv.readworkers.worker.replica import Replica
    path, original = saved(tmp_path)
    shared = SharedGeneration(str(tmp_path / "generation"), writable=True)
    replica = Replica(shared, Clock())
    fd = os.open(path, os.O_RDONLY)
    os.lseek(fd, 7, os.SEEK_SET)   # the main process's offset: the worker's reads do not depend on it
    topics, _ = restore_baseline(replica, fd)
    assert topics == 300 and replica.complete and replica.generation is None   # fresh after its first publication
    for topic in TOPICS:
        assert replica.context.routes.route_body(topic, True) == original.route_body(topic, True)
    with open(path, "r+b") as f:
        f.seek(-3, os.SEEK_END)
        f.write(b"xyz")
    try:
        restore_baseline(Replica(shared, Clock()), os.open(path, os.O_RDONLY))
        raise AssertionError("an altered file was restored")
    except Exception as e:
        assert type(e).__name__ == "SnapshotError"
