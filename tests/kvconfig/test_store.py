import json
import os

import pytest
import pytest_twisted
from twisted.internet import defer
from twisted.logger import Logger

from namesrv.kvconfig import KVConfigError, KVConfigManager
from namesrv.kvconfig import filewriter
from tests.fakes import RecordingEventLog

# As 4.9.8's fastjson writes it: compact, raw UTF-8.
JAVA_FILE = ('{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4;broker-b:4","TopicB":"broker-a:8"},'
             '"ns":{"k":"v","clé":"värde"}}}').encode("utf-8")




def loaded(path, events=None):
    kv = KVConfigManager(str(path), events=events)
    kv.load()
    return kv


def test_java_file_loads_unchanged(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_bytes(JAVA_FILE)
    kv = loaded(path)
    assert kv.get("ORDER_TOPIC_CONFIG", "TopicA") == "broker-a:4;broker-b:4"
    assert kv.get("ns", "clé") == "värde"
    assert kv.kv_table_body("ns") == '{"table":{"k":"v","clé":"värde"}}'.encode("utf-8")
    assert kv.kv_table_body("none") is None and kv.get("ns", "none") is None and kv.get("none", "k") is None
    assert kv.encode() == JAVA_FILE  # what we write is what Java wrote


def test_values_fastjson_would_read_as_strings(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_text('{"configTable":{"ns":{"n":5,"b":true,"gone":null},"empty":null},"other":1}')
    kv = loaded(path)
    assert kv.namespace("ns") == {"n": "5", "b": "true"}
    assert kv.namespace("empty") == {}


def test_namespace_is_a_copy(tmp_path):
    kv = loaded(tmp_path / "kvConfig.json")
    kv.table["ns"] = {"k": "v"}
    copy = kv.namespace("ns")
    copy["k"] = "changed"
    assert kv.get("ns", "k") == "v" and kv.namespace("absent") is None


def test_missing_file_starts_empty(tmp_path):
    kv = loaded(tmp_path / "absent.json")
    assert kv.table == {} and not (tmp_path / "absent.json").exists()


@pytest.mark.parametrize("content", [b"{broken", b"[]", b'{"configTable":[1]}', b'{"configTable":[]}',
                                     b'{"configTable":{"ns":"x"}}', b"", b"  \n", b"\xff\xfe{}"])
def test_corrupt_file_refuses_naming_the_file_and_leaves_it_alone(tmp_path, content):
    path = tmp_path / "kvConfig.json"
    path.write_bytes(content)
    with pytest.raises(KVConfigError, match="kvConfig.json is corrupt"):
        loaded(path)
    assert path.read_bytes() == content


def test_corrupt_file_error_points_at_the_backup(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_text("{")
    (tmp_path / "kvConfig.json.bak").write_text('{"configTable":{}}')
    with pytest.raises(KVConfigError, match="kvConfig.json.bak"):
        loaded(path)


def test_unreadable_file_refuses(tmp_path):
    (tmp_path / "kvConfig.json").mkdir()  # reading a directory fails, as an unreadable file would
    with pytest.raises(KVConfigError, match="cannot read KV config file .*kvConfig.json"):
        loaded(tmp_path / "kvConfig.json")
    (tmp_path / "file").write_text("")
    with pytest.raises(KVConfigError, match="cannot read KV config file .*file/kvConfig.json: Not a directory$"):
        loaded(tmp_path / "file" / "kvConfig.json")


def test_temp_files_of_an_interrupted_write_are_removed_at_load(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_bytes(JAVA_FILE)
    for name in ("kvConfig.json.abc123.tmp", "kvConfig.json.bak.tmp", "other.json.x.tmp"):
        (tmp_path / name).write_text("partial")
    loaded(path)
    assert sorted(os.listdir(tmp_path)) == ["kvConfig.json", "other.json.x.tmp"]


@pytest_twisted.inlineCallbacks
def test_changes_are_persisted_with_a_backup(tmp_path):
    path = tmp_path / "sub" / "kvConfig.json"
    kv = loaded(path)
    yield kv.put("ns", "a", "1")
    yield kv.put("ns", "b", "2")
    assert json.loads(path.read_text()) == {"configTable": {"ns": {"a": "1", "b": "2"}}}
    assert json.loads((tmp_path / "sub" / "kvConfig.json.bak").read_text()) == {"configTable": {"ns": {"a": "1"}}}
    yield kv.delete("ns", "a")
    yield kv.delete("ns", "never-there")
    yield kv.delete("no-such-namespace", "k")
    assert json.loads(path.read_text()) == {"configTable": {"ns": {"b": "2"}}}
    assert loaded(path).table == kv.table
    assert [n for n in os.listdir(tmp_path / "sub") if n.endswith(".tmp")] == []


@pytest_twisted.inlineCallbacks
def test_delete_keeps_an_emptied_namespace(tmp_path):
    kv = loaded(tmp_path / "kvConfig.json")
    yield kv.put("ns", "k", "v")
    yield kv.delete("ns", "k")
    assert kv.kv_table_body("ns") == b'{"table":{}}'
    assert loaded(tmp_path / "kvConfig.json").namespace("ns") == {}


@pytest_twisted.inlineCallbacks
def test_a_burst_of_changes_is_coalesced_and_all_land(tmp_path, monkeypatch):
    writes = []
    real = filewriter.write_atomic

    def counting(path, data, keep_backup=False):
        writes.append(len(json.loads(data)["configTable"]["ns"]))
        return real(path, data, keep_backup)

    monkeypatch.setattr(filewriter, "write_atomic", counting)
    path = tmp_path / "kvConfig.json"
    kv = loaded(path)
    yield defer.gatherResults([kv.put("ns", "k%d" % i, str(i)) for i in range(50)])
    # the first change starts a write at once; the 49 made meanwhile share the next one
    assert writes == [1, 50]
    assert len(json.loads(path.read_text())["configTable"]["ns"]) == 50


@defer.inlineCallbacks
def after_a_failed_write(tmp_path):
    """(a store whose directory is a file, after a put that could not be written; that file, which the
    test removes to mend the disk)."""
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    kv = KVConfigManager(str(blocker / "kvConfig.json"))
    with pytest.raises(OSError):
        yield kv.put("ns", "k", "v")
    return kv, blocker


@pytest_twisted.inlineCallbacks
def test_write_failure_fails_the_change_and_keeps_memory(tmp_path):
    kv, blocker = yield after_a_failed_write(tmp_path)
    assert kv.get("ns", "k") == "v" and kv.pending
    blocker.unlink()  # the operator fixes the disk; the next flush retries
    yield kv.flush()
    assert not kv.pending
    assert json.loads((blocker / "kvConfig.json").read_text()) == {"configTable": {"ns": {"k": "v"}}}


@pytest_twisted.inlineCallbacks
def test_flush_sync_writes_what_a_failed_write_left(tmp_path):
    kv, blocker = yield after_a_failed_write(tmp_path)
    assert kv.flush_sync() is False  # still failing: reported, not raised
    blocker.unlink()
    assert kv.flush_sync() is True
    assert json.loads((blocker / "kvConfig.json").read_text()) == {"configTable": {"ns": {"k": "v"}}}
    assert kv.flush_sync() is True and (yield kv.flush()) is None  # nothing pending: no write


def test_events_name_real_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(filewriter.SerialFileWriter, "changed", lambda self: defer.succeed(None))
    events = RecordingEventLog()
    kv = loaded(tmp_path / "kvConfig.json", events)
    kv.put("ns", "k", "v")
    kv.put("ns", "k", "v")  # same value: nothing changed
    kv.delete("ns", "absent")
    kv.delete("ns", "k")
    assert events.emitted == [("kv_changed", {"op": "put", "namespace": "ns", "key": "k"}),
                             ("kv_changed", {"op": "delete", "namespace": "ns", "key": "k"})]


def test_print_all_logs_size_and_every_entry(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_bytes(JAVA_FILE)
    kv = loaded(path)
    logged = []
    kv.log = Logger(observer=logged.append)
    kv.print_all()
    from twisted.logger import formatEvent
    lines = [formatEvent(e) for e in logged]
    assert "configTable SIZE: 2" in lines
    assert "configTable NS: ORDER_TOPIC_CONFIG Key: TopicA Value: broker-a:4;broker-b:4" in lines
    assert "configTable NS: ns Key: clé Value: värde" in lines
    assert len([line for line in lines if " NS: " in line]) == 4
