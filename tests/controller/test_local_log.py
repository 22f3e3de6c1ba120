"""One controller's journal: answered only once on disk, replayed after a restart, compacted, a torn
last line dropped."""

import json
import os

import pytest_twisted
from twisted.internet import reactor

from namesrv.controller.replication.local import JOURNAL_FILE, STATE_FILE, LocalLog
from namesrv.controller.state import ReplicaState


def apply_id(name, broker_id):
    return {"type": "apply_broker_id", "clusterName": "c", "brokerName": name, "brokerId": broker_id,
            "brokerAddress": "127.0.0.1:%d" % (30000 + broker_id), "registerCheckCode": "x;%d" % broker_id}


def elect(name, master):
    return {"type": "elect_master", "brokerName": name, "newMasterId": master}


def fresh(tmp_path, **kwargs):
    log = LocalLog(ReplicaState(), str(tmp_path), "n0", "127.0.0.1:9878", "g", reactor, **kwargs)
    log.start()
    return log


@pytest_twisted.inlineCallbacks
def test_a_restart_replays_the_journal_and_keeps_ids_and_epochs(tmp_path):
    log = fresh(tmp_path)
    yield log.propose([apply_id("a", 1), apply_id("a", 2)])
    yield log.propose([elect("a", 1)])
    yield log.propose([elect("a", 2)])
    lines = (tmp_path / JOURNAL_FILE).read_text().splitlines()
    assert [json.loads(line)["n"] for line in lines] == [1, 2, 3, 4]     # on disk before the answers
    log.stop()
    again = fresh(tmp_path)
    group = again.state.group("a")
    assert (group.next_broker_id, group.master_id, group.master_epoch, again.state.applied) == (3, 2, 2, 4)
    again.stop()


@pytest_twisted.inlineCallbacks
def test_compaction_writes_the_state_and_starts_the_journal_again(tmp_path):
    log = fresh(tmp_path, compact_every=5)
    for broker_id in range(1, 8):
        yield log.propose([apply_id("a", broker_id)])
    assert json.loads((tmp_path / STATE_FILE).read_text())["applied"] == 5
    assert len((tmp_path / JOURNAL_FILE).read_text().splitlines()) == 2
    log.stop()
    again = fresh(tmp_path, compact_every=5)
    assert sorted(again.state.group("a").brokers) == list(range(1, 8)) and again.state.applied == 7
    again.stop()


@pytest_twisted.inlineCallbacks
def test_a_crash_between_snapshot_and_truncation_applies_nothing_twice(tmp_path):
    log = fresh(tmp_path)
    yield log.propose([apply_id("a", 1), elect("a", 1)])
    log.stop()
    journal = (tmp_path / JOURNAL_FILE).read_bytes()
    state = log.state.to_dict()
    (tmp_path / STATE_FILE).write_text(json.dumps(state))           # the snapshot made, the journal kept
    again = fresh(tmp_path)
    assert (tmp_path / JOURNAL_FILE).read_bytes() == journal
    assert again.state.group("a").master_epoch == 1 and again.state.applied == 2
    again.stop()


def test_a_torn_last_line_is_dropped(tmp_path):
    good = json.dumps({"n": 1, "event": apply_id("a", 1)}) + "\n"
    (tmp_path / JOURNAL_FILE).write_text(good + '{"n": 2, "event": {"type": "elect_ma')
    log = fresh(tmp_path)
    assert log.state.applied == 1 and log.state.group("a").master_id is None
    assert (tmp_path / JOURNAL_FILE).read_text() == good
    log.stop()


def test_an_unreadable_state_file_refuses_to_start(tmp_path):
    import pytest
    from namesrv.controller.replication.local import ControllerStateError
    (tmp_path / STATE_FILE).write_text("{not json")
    with pytest.raises(ControllerStateError):
        fresh(tmp_path)
    assert os.path.exists(tmp_path / STATE_FILE)
