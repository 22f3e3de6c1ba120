"""What members may send each other: pysyncobj's messages as checked data, never objects."""

import pickle

import msgpack
import pytest

from namesrv.controller.replication.codec import (CodecError, SafePickle, check_command, check_message,
                                                   encode_events, pack, unpack)

EVENT = {"type": "elect_master", "brokerName": "broker-a", "newMasterId": 2}


def test_every_message_pysyncobj_sends_passes():
    entries = [[encode_events([EVENT]), 7, 3], [b"\x01", 8, 3]]
    for message in ({"type": "request_vote", "term": 3, "last_log_index": 7, "last_log_term": 2},
                    {"type": "response_vote", "term": 3},
                    {"type": "next_node_idx", "next_node_idx": 9, "reset": False, "success": True},
                    {"type": "append_entries", "term": 3, "commit_index": 6, "entries": entries, "prevLogIdx": 6,
                     "prevLogTerm": 2},
                    {"type": "append_entries", "term": 3, "commit_index": 6, "entries": [], "prevLogIdx": None,
                     "prevLogTerm": None},
                    {"type": "append_entries", "term": 3, "commit_index": 6, "serialized": [b"chunk", True, False]},
                    {"type": "append_entries", "term": 3, "commit_index": 6, "serialized": None}):
        checked = check_message(unpack(pack(message)))
        assert checked["type"] == message["type"]
    assert check_message(unpack(pack({"type": "append_entries", "term": 3, "commit_index": 6, "entries": entries,
                                      "prevLogIdx": 6, "prevLogTerm": 2})))["entries"][0][1:] == (7, 3)


@pytest.mark.parametrize("message", [
    {"type": "apply_command", "command": b"\x00x"},            # a forwarded command: never accepted
    {"type": "apply_command_response", "request_id": 1},
    {"type": "timeout_now", "term": 3},
    {"type": "request_vote", "term": -1, "last_log_index": 0, "last_log_term": 0},
    {"type": "request_vote", "term": "3", "last_log_index": 0, "last_log_term": 0},
    {"type": "request_vote", "term": 3, "last_log_index": 0, "last_log_term": 0, "extra": 1},
    {"type": "next_node_idx", "next_node_idx": 9, "reset": 0, "success": True},
    {"type": "append_entries", "term": 3, "commit_index": 6, "entries": [[b"\x02['add', 'n9']", 7, 3]],
     "prevLogIdx": 6, "prevLogTerm": 2},                        # a membership change
    {"type": "append_entries", "term": 3, "commit_index": 6, "entries": [[b"\x03" + pack(2), 7, 3]],
     "prevLogIdx": 6, "prevLogTerm": 2},                        # a code-version change
    {"type": "append_entries", "term": 3, "commit_index": 6,
     "entries": [[b"\x00" + pickle.dumps((0, ([EVENT],))), 7, 3]], "prevLogIdx": 6, "prevLogTerm": 2},
    {"type": "append_entries", "term": 3, "commit_index": 6, "entries": [[encode_events([{"type": 1}]), 7, 3]],
     "prevLogIdx": 6, "prevLogTerm": 2},
    {"type": "append_entries", "term": 3, "commit_index": 6, "transmission": "start", "data": b"x",
     "prevLogIdx": 6, "prevLogTerm": 2},
    ["not", "a", "map"],
])
def test_anything_else_is_refused(message):
    with pytest.raises(CodecError):
        check_message(unpack(pack(message)))


def test_the_pickle_pysyncobj_calls_is_msgpack_and_gives_tuples_back():
    assert SafePickle.loads(SafePickle.dumps((0, ([EVENT],)))) == (0, [[EVENT]])
    with pytest.raises(CodecError):
        SafePickle.loads(pickle.dumps(object()))
    with pytest.raises(CodecError):
        SafePickle.load(None)


def test_msgpack_extensions_and_trailing_bytes_are_refused():
    with pytest.raises(CodecError):
        unpack(msgpack.packb(msgpack.ExtType(1, b"x")))
    with pytest.raises(CodecError):
        unpack(pack({"a": 1}) + b"\x00")
    with pytest.raises(CodecError):
        check_command(b"\x00" + pack([0, [[{"type": "x", "nested": {"a": 1}}]]]))
