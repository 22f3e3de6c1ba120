"""A read worker's replica answers exactly as the main process, and only while fresh.

The main service runs in process; replica messages go through the real encoder and
MessageReader, as they would down a worker's stdin.
"""

import pytest

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.readworkers.channel.feed import FeedError, MessageReader, down_reader, pack, publication, topics_message
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.worker.replica import Replica
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from namesrv.routes.snapshot import encode_snapshot, restore_snapshot
from processors.route import RouteProcessor
from tests.brokers import register_request, route_request
from tests.fakes import FakeConnection, run_turns, Reactor
from tests.readworkers.harness import Harness


@pytest.fixture
def harness(tmp_path):
    return Harness(tmp_path)


def test_deltas_keep_the_replica_identical_to_the_main_tables(harness):
    topics = ["T1", "T2", "T3", "T4", "Gone"]
    assert harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2", "T3"])
                        ).code == ResponseCode.SUCCESS
    harness.publish()
    harness.assert_same_answers(topics)
    harness.main(register_request("C1", "broker-b", "10.0.0.2:10911", topics=["T2", "T4"]))
    harness.main(register_request("C2", "broker-c", "10.0.0.3:10911", broker_id=0, topics=["T4", "Gone"]))
    harness.publish()
    harness.assert_same_answers(topics)
    assert harness.sizes[-1] == (False, 3)   # only T2, T4 and Gone travelled
    harness.main(make_request(RequestCode.UNREGISTER_BROKER, {"brokerName": "broker-a", "clusterName": "C1",
                                                              "brokerAddr": "10.0.0.1:10911", "brokerId": "0"}))
    harness.main(make_request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"}))
    harness.main(make_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "Gone"}))
    harness.publish()
    harness.assert_same_answers(topics)
    assert harness.replica.registry.dispatch(route_request("T1"), FakeConnection("127.0.0.1:40000")).code == ResponseCode.TOPIC_NOT_EXIST


def test_kv_and_config_travel_with_the_replica(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["Ordered", "Plain"]))
    harness.main(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": ORDER_TOPIC_CONFIG, "key": "Ordered",
                                                          "value": "broker-a:8"}))
    harness.main(make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true"))
    harness.publish()
    harness.assert_same_answers(["Ordered", "Plain"])
    assert b'"orderTopicConf":"broker-a:8"' in harness.replica.registry.dispatch(route_request("Ordered"),
                                                                                  FakeConnection("127.0.0.1:40000")).body


def test_stale_from_the_change_until_the_next_replica(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    assert not harness.replica.fresh()   # the counter moved before the registration was answered
    harness.publish()
    assert harness.replica.fresh()
    # an identical heartbeat changes nothing a read could see: the replica stays fresh
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    assert harness.replica.fresh()


def test_a_restore_sends_every_topic_again(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    harness.publish()
    saved = encode_snapshot(harness.service.routes)
    harness.main(register_request("C1", "broker-b", "10.0.0.2:10911", topics=["T3", "T4"]))
    harness.publish()
    restore_snapshot(harness.service.routes, saved)
    harness.publish()
    assert harness.sizes[-1][0] is True
    harness.assert_same_answers(["T1", "T2", "T3", "T4"])


def test_nothing_is_answered_before_a_full_copy(harness):
    replica = Replica(SharedGeneration(harness.shared.path), Reactor())
    delta = list(publication(harness.shared.value, harness.service.routes, harness.service.kv,
                             harness.service.config, 0, RouteProcessor.replicable_codes, {"T1"}))
    for message in down_reader().feed(b"".join(delta)):
        replica.apply(message)
    assert not replica.fresh() and not replica.complete
    # a full copy cut short (its reset part lost) is refused, and leaves nothing usable
    final = down_reader().feed(list(publication(harness.shared.value, harness.service.routes, harness.service.kv,
                                                  harness.service.config, 0, RouteProcessor.replicable_codes))[-1])[0]
    with pytest.raises(ValueError):
        replica.apply(final)
    assert not replica.fresh()


def test_a_replica_a_change_behind_still_holds_what_was_acknowledged_before_it(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    harness.publish()
    before = harness.shared.value
    assert harness.replica.fresh() and harness.replica.holds(before)
    harness.main(register_request("C1", "broker-b", "10.0.0.2:10911", topics=["T1", "T2"]))
    after = harness.shared.value
    assert after > before and not harness.replica.fresh()
    # a read that came before broker-b's acknowledgement may be answered; one that came after may not
    assert harness.replica.holds(before) and not harness.replica.holds(after)
    harness.publish()
    assert harness.replica.holds(before) and harness.replica.holds(after)
    part = down_reader().feed(topics_message(harness.service.routes, ["T1"]))[0]
    harness.replica.apply(part)
    assert not harness.replica.holds(before)   # the tables are between two states


def test_a_half_applied_publication_is_not_fresh(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    harness.publish()
    assert harness.replica.fresh()
    part = down_reader().feed(topics_message(harness.service.routes, ["T1"]))[0]
    harness.replica.apply(part)
    assert not harness.replica.fresh()   # same counter, but the tables are between two states
    harness.publish()
    assert harness.replica.fresh()


def test_whatever_the_tables_hold_reaches_the_replica(harness):
    """A lone surrogate in a topic name and an integer beyond 64 bits (both accepted from a broker's
    JSON body) travel as they are: the replica answers exactly as the main process."""
    from tests.brokers import topic_config
    odd = ["Odd\udc80Topic", topic_config("Huge", queues=10 ** 30)]
    assert harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=odd)).code == ResponseCode.SUCCESS
    harness.publish()
    harness.assert_same_answers(["Odd\udc80Topic", "Huge"])
    assert harness.replica.registry.dispatch(route_request("Huge"), FakeConnection("127.0.0.1:40000")).code == ResponseCode.SUCCESS


def test_a_downward_reader_refuses_garbage():
    with pytest.raises(FeedError):
        down_reader().feed(b"\x00\x00\x00\x03abc")


def test_generation_is_shared_between_mappings(tmp_path):
    writer = SharedGeneration(str(tmp_path / "g"), writable=True)
    reader = SharedGeneration(str(tmp_path / "g"))
    assert reader.read() == 0
    writer.bump()
    writer.bump()
    assert reader.read() == 2


def test_message_reader_takes_any_cut_and_refuses_garbage():
    data = pack({"kind": "counts", "counts": [[105, 0, 3, 12]]}) * 3
    reader = MessageReader()
    out = []
    for i in range(len(data)):
        out += reader.feed(data[i:i + 1])
    assert [m["counts"] for m in out] == [[[105, 0, 3, 12]]] * 3
    with pytest.raises(FeedError):
        MessageReader().feed(b"\x00\x00\x00\x02\xc1\xc1")
    with pytest.raises(FeedError):
        MessageReader().feed(b"\xff\xff\xff\xff")


def test_a_failed_publication_leaves_workers_forwarding_and_tries_again(harness):
    from namesrv.readworkers.main.publisher import TopicTracker as Tracker
    from tests.readworkers.pools import pool_for

    class Worker:
        needs_full = False
        sent = ()

        def send(self, message):
            self.sent += (message,)

    pool = pool_for(harness.service)
    pool.running = True
    pool.workers[0] = Worker()
    publisher = pool.publisher
    publisher.generation = harness.shared
    publisher.tracker = Tracker()

    def broken():
        raise OverflowError("not encodable")
        yield

    publisher._messages = broken()
    publisher._send_next()
    assert publisher._messages is None and pool.workers[0].needs_full
    assert publisher._publish_call is not None and publisher._publish_call.active()
    harness.service.reactor.advance(2)      # the retry: a full copy this time
    run_turns(harness.service.reactor)
    assert publisher.publishes == 1 and pool.workers[0].sent


def test_a_quiet_publication_answers_nothing_between_its_parts_and_is_fresh_at_its_end(harness, tmp_path):
    """Quiet parts (a close nobody was told of) leave the counter as it was, but the replica answers nothing
    between them: the main process made the change whole (replica.py's invariant; it answered mid-way once)."""
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2", "T3"]))
    harness.publish()
    assert harness.replica.fresh()
    connection = FakeConnection("127.0.0.1:40001")
    harness.service.registry.dispatch(register_request("C1", "broker-b", "10.0.0.2:10911", topics=["T1", "T2", "T3"]),
                                      connection)
    harness.publish()
    # broker-b's connection closes: nobody is told, so the counter does not move and the parts are quiet
    harness.service.routes.changes.listeners.remove(harness.changed)
    harness.service.routes.on_connection_closed(connection)
    generation = harness.shared.value
    _, topics = harness.tracker.take()
    messages = down_reader().feed(b"".join(publication(
        generation, harness.service.routes, harness.service.kv, harness.service.config,
        harness.service.context.started, RouteProcessor.replicable_codes, {"T1", "T2", "T3"}, part_topics=1,
        quiet=True)))
    assert [m.get("quiet") for m in messages[:-1]] == [True, True, True]
    for message in messages[:-1]:
        harness.replica.apply(message)
        assert not harness.replica.fresh() and not harness.replica.holds(generation)
    harness.replica.apply(messages[-1])
    assert harness.shared.value == generation        # the counter never moved
    assert harness.replica.fresh()
    harness.assert_same_answers(["T1", "T2", "T3"])


def test_a_part_that_is_not_quiet_makes_the_replica_stale_until_its_publication_ends(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1"]))
    harness.publish()
    part = down_reader().feed(topics_message(harness.service.routes, ["T1"]))[0]
    harness.replica.apply(part)
    assert not harness.replica.fresh() and harness.replica.in_publication   # reads go on to the main process
    harness.publish()
    assert harness.replica.fresh() and not harness.replica.in_publication


def test_a_publication_keeps_the_bodies_of_topics_whose_brokers_did_not_change(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    harness.main(register_request("C1", "broker-b", "10.0.0.2:10911", topics=["T3", "T4"]))
    harness.publish()
    harness.assert_same_answers(["T1", "T2", "T3", "T4"])       # every body joined and kept
    joined = harness.replica.context.routes.joined_bodies(True, False)    # standard JSON, as both versions ask
    assert set(joined) == {"T1", "T2", "T3", "T4"}
    kept = joined["T1"]
    harness.main(register_request("C1", "broker-b", "10.0.0.3:10911", broker_id=1, topics=["T3", "T4"]))  # a slave
    harness.publish()
    assert joined.get("T1") is kept and not {"T3", "T4"} & set(joined)   # only broker-b's topics went
    harness.assert_same_answers(["T1", "T2", "T3", "T4"])
    assert b"10.0.0.3:10911" in joined["T3"]


@pytest.mark.parametrize("incremental", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_random_changes_keep_every_kept_body_right(harness, seed, incremental):
    """Random registrations, unregistrations, permission changes, filter servers, cluster moves and
    deletions on the main tables; after each publication every topic's answer from the replica (its
    kept bodies warm from the previous round) equals the main process's."""
    import random
    rng = random.Random(seed)
    topics = ["T%d" % i for i in range(8)]
    brokers = [("broker-%s" % name, "10.0.0.%d:10911" % (i + 1)) for i, name in enumerate("abcd")]
    for _ in range(25):
        for _ in range(rng.randrange(1, 4)):
            name, addr = rng.choice(brokers)
            roll = rng.random()
            if roll < 0.5:
                broker_id = rng.choice([0, 0, 1])
                harness.main(register_request(rng.choice(["C1", "C1", "C2"]), name,
                                              addr if broker_id == 0 else addr.replace(":10911", ":10921"),
                                              broker_id=broker_id, topics=rng.sample(topics, rng.randrange(1, 5)),
                                              counter=rng.randrange(1, 4), extra_ext=None))
            elif roll < 0.65:
                harness.main(make_request(RequestCode.UNREGISTER_BROKER, {
                    "brokerName": name, "clusterName": "C1", "brokerAddr": addr, "brokerId": "0"}))
            elif roll < 0.8:
                code = rng.choice([RequestCode.WIPE_WRITE_PERM_OF_BROKER, RequestCode.ADD_WRITE_PERM_OF_BROKER])
                harness.main(make_request(code, {"brokerName": name}))
            else:
                harness.main(make_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": rng.choice(topics)}))
        harness.publish(part_topics=rng.choice([1, 3, 500]), incremental=incremental)
        harness.assert_same_answers(topics)
    assert (harness.by_moves > 0) == incremental


def test_a_topic_moved_twice_and_one_changed_without_a_move_reach_the_replica(harness):
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2", "T3", "T4"], counter=1))
    harness.publish(part_topics=500, incremental=True)
    harness.main(register_request("C1", "broker-b", "10.0.0.2:10911", topics=["T1", "T3"], counter=1))   # T1, T3 move
    harness.main(make_request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"}))   # ...again
    routes = harness.service.routes
    with routes.changes.operation(routes.tables):   # T2, T4: a static-topic mapping, no move
        routes.tables.put_mappings({t: {"bname": "broker-a", "epoch": 1, "topic": t} for t in ("T2", "T4")})
    # four topics changed, four moves: but T1 and T3 twice, T2 and T4 by none
    harness.publish(part_topics=500, incremental=True)
    harness.assert_same_answers(["T1", "T2", "T3", "T4"])
    assert harness.replica.context.routes.topic_queue_mapping_info_table == routes.topic_queue_mapping_info_table
    harness.replica.context.routes.check_invariants()


@pytest.mark.parametrize("seed", range(8))
def test_registrations_and_closed_connections_read_through_a_worker_connection_match_the_main_process(
        tmp_path, seed):
    """Brokers register on connections of their own and leave when those close (the quiet changes of
    the publisher); after each incremental publication, reads through a worker's client connection
    (its answer cache and kept bodies warm from the previous round, each read twice) answer as the
    main process does."""
    import random
    from twisted.internet import task
    from namesrv.protocol.codec import decode_frame, encode_frame
    from tests.fakes import written_frames
    from tests.readworkers.harness import Factory, connect
    rng = random.Random(seed)
    harness = Harness(tmp_path)
    proto, transport = connect(Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock()))
    topics = ["T%d" % i for i in range(8)]
    brokers = [("broker-%s" % name, "10.0.0.%d:10911" % (i + 1)) for i, name in enumerate("abc")]
    connections = {}
    for step in range(30):
        for _ in range(rng.randrange(1, 3)):
            name, addr = rng.choice(brokers)
            if rng.random() < 0.6:
                connection = FakeConnection("10.9.9.%d:1" % step)
                harness.service.registry.dispatch(register_request(
                    "C1", name, addr, topics=rng.sample(topics, rng.randrange(2, 6)), counter=rng.randrange(1, 4)),
                    connection)
                connections[name] = connection
            elif name in connections:
                harness.service.housekeeping.connection_closed(connections.pop(name))
                harness.service.housekeeping.flush()
        harness.publish(part_topics=rng.choice([1, 3, 500]), incremental=True)
        for round_ in range(2):
            requests = [route_request(t, opaque=i + 1 + 100 * round_) for i, t in enumerate(topics)]
            requests.append(make_request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=99 + 100 * round_))
            for request in requests:   # one at a time: a pipeline would wait for the worker's turns
                proto.dataReceived(encode_frame(request))
            answers = [decode_frame(f[4:]) for f in written_frames(transport)]
            assert len(answers) == len(requests)
            for request, ours in zip(requests, answers):
                main = harness.main(request)
                assert (ours.code, ours.body) == (main.code, main.body), (step, request.ext)


def test_a_publication_the_tables_changed_under_answers_nothing_until_a_whole_one_follows(harness):
    """Parts are encoded a turn apart: when something changed meanwhile (``whole`` false), the replica holds
    topics of different moments and answers nothing, neither fresh nor holding, until the next publication."""
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2", "T3"]))
    harness.publish()
    generation = harness.shared.value
    _, topics = harness.tracker.take()
    messages = down_reader().feed(b"".join(publication(
        generation, harness.service.routes, harness.service.kv, harness.service.config,
        harness.service.context.started, RouteProcessor.replicable_codes, {"T1", "T2"}, part_topics=1,
        unchanged=lambda: False)))
    assert messages[-1]["whole"] is False
    for message in messages:
        harness.replica.apply(message)
    assert harness.replica.mixed and not harness.replica.fresh() and not harness.replica.holds(generation)
    harness.publish()
    assert harness.replica.fresh() and not harness.replica.mixed
