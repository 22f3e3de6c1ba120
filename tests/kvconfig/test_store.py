import json
import os

import pytest
import pytest_twisted

from namesrv.kvconfig import KVConfigError, KVConfigManager

JAVA_FILE = '{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4;broker-b:4"},"ns":{"k":"v"}}}'


def test_java_file_loads_unchanged(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_text(JAVA_FILE)
    kv = KVConfigManager(str(path))
    kv.load()
    assert kv.get("ORDER_TOPIC_CONFIG", "TopicA") == "broker-a:4;broker-b:4"
    assert kv.kv_table_body("ns") == b'{"table":{"k":"v"}}'
    assert kv.kv_table_body("none") is None and kv.get("ns", "none") is None
    assert json.loads(kv.encode()) == json.loads(JAVA_FILE)


def test_missing_file_starts_empty(tmp_path):
    kv = KVConfigManager(str(tmp_path / "absent.json"))
    kv.load()
    assert kv.table == {}


@pytest.mark.parametrize("content", ["{broken", "[]", '{"configTable":[1]}', '{"configTable":{"ns":"x"}}'])
def test_corrupt_file_refuses_naming_the_file(tmp_path, content):
    path = tmp_path / "kvConfig.json"
    path.write_text(content)
    with pytest.raises(KVConfigError, match="kvConfig.json"):
        KVConfigManager(str(path)).load()
    assert path.read_text() == content


@pytest_twisted.inlineCallbacks
def test_changes_are_persisted_with_a_backup(tmp_path):
    path = tmp_path / "sub" / "kvConfig.json"
    kv = KVConfigManager(str(path))
    kv.load()
    yield kv.put("ns", "a", "1")
    yield kv.put("ns", "b", "2")
    assert json.loads(path.read_text()) == {"configTable": {"ns": {"a": "1", "b": "2"}}}
    assert json.loads((tmp_path / "sub" / "kvConfig.json.bak").read_text()) == {"configTable": {"ns": {"a": "1"}}}
    yield kv.delete("ns", "a")
    yield kv.delete("ns", "never-there")
    assert json.loads(path.read_text()) == {"configTable": {"ns": {"b": "2"}}}
    reloaded = KVConfigManager(str(path))
    reloaded.load()
    assert reloaded.table == kv.table


@pytest_twisted.inlineCallbacks
def test_a_burst_of_changes_all_land(tmp_path):
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(str(path))
    yield defer_all([kv.put("ns", "k%d" % i, str(i)) for i in range(50)])
    assert len(json.loads(path.read_text())["configTable"]["ns"]) == 50


def defer_all(ds):
    from twisted.internet import defer
    return defer.gatherResults(ds)


@pytest_twisted.inlineCallbacks
def test_write_failure_fails_the_change_and_keeps_memory(tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    kv = KVConfigManager(str(blocker / "kvConfig.json"))
    with pytest.raises(OSError):
        yield kv.put("ns", "k", "v")
    assert kv.get("ns", "k") == "v"


def test_flush_sync_writes_pending_changes(tmp_path):
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(str(path))
    kv.table = {"ns": {"k": "v"}}
    kv._dirty = True
    kv.flush_sync()
    assert json.loads(path.read_text()) == {"configTable": {"ns": {"k": "v"}}}
