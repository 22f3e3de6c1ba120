"""Random sequences of what brokers, admins and deaths do to a controller: never a crash, never an epoch
going back, and a state that survives its own snapshot (hypothesis)."""

import json

from hypothesis import given, settings, strategies as st

from namesrv.controller.state import ReplicaState
from namesrv.protocol.codes import RequestCode
from tests.controller.harness import ControllerHarness, FakeBroker

GROUPS = ("broker-a", "broker-b")
PYTHON_ERRORS = ("KeyError", "TypeError", "AttributeError", "ValueError", "IndexError", "AssertionError")

step = st.one_of(
    st.tuples(st.just("start"), st.integers(0, 3)),
    st.tuples(st.just("beat"), st.integers(0, 3), st.integers(-1, 3), st.integers(-1, 500)),
    st.tuples(st.just("die"), st.integers(0, 3)),
    st.tuples(st.just("elect"), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("alter"), st.integers(0, 3), st.frozensets(st.integers(0, 4), max_size=4),
              st.integers(-1, 6), st.integers(-1, 6)),
    st.tuples(st.just("clean"), st.integers(0, 1), st.sampled_from(["", "1", "2", "1;2", "x"]), st.booleans()),
    st.tuples(st.just("scan"),),
    st.tuples(st.just("time"), st.integers(0, 20)),
)


@settings(max_examples=400)
@given(st.lists(step, max_size=40))
def test_any_sequence_keeps_epochs_monotonic_and_the_state_whole(steps):
    h = ControllerHarness()
    brokers = [FakeBroker(h, name=GROUPS[i % 2], port=30000 + 10 * i) for i in range(4)]
    epochs = {}
    for action, *args in steps:
        broker = brokers[args[0]] if action in ("start", "beat", "die", "elect", "alter") else None
        answer = None
        if action == "start":
            answer = broker.start() if broker.broker_id is None else broker.register()
        elif action == "beat" and broker.broker_id is not None:
            answer = broker.beat(epoch=args[1], max_offset=args[2])
        elif action == "die":
            broker.die()
        elif action == "elect" and broker.broker_id is not None:
            answer = broker.elect(designate=args[1])
        elif action == "alter" and broker.broker_id is not None:
            answer = broker.alter_sync_state_set(set(args[1]), args[2], master_epoch=args[3])
        elif action == "clean":
            answer = h.call(RequestCode.CLEAN_BROKER_DATA, {"clusterName": "DefaultCluster",
                                                            "brokerName": GROUPS[args[0]],
                                                            "brokerControllerIdsToClean": args[1],
                                                            "isCleanLivingBroker": str(args[2]).lower()})
        elif action == "scan":
            h.controller.scan_inactive_masters()
        elif action == "time":
            h.clock.advance(args[0])
            h.controller.heartbeats.scan()
        if answer is not None:
            assert not (answer.remark or "").startswith(PYTHON_ERRORS), answer.remark
        for name, group in h.state.groups.items():
            before = epochs.get(name, (0, 0))
            assert group.master_epoch >= before[0] and group.sync_state_set_epoch >= before[1]
            epochs[name] = (group.master_epoch, group.sync_state_set_epoch)
            assert group.sync_state_set <= set(group.brokers) | {group.master_id}
            assert group.next_broker_id > max(group.brokers, default=0)
        for name in list(epochs):
            if name not in h.state.groups:
                del epochs[name]          # cleaned: a group that comes back starts afresh, as in Java
    copy = ReplicaState()
    copy.load_dict(json.loads(json.dumps(h.state.to_dict())))
    assert copy.to_dict() == h.state.to_dict()
