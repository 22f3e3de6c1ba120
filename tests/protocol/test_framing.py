"""FrameReader alone: byte streams in, frames (or BadFrame) out, nothing lost between reads."""

import struct

import pytest

from namesrv.protocol.codec import encode_frame
from namesrv.protocol.command import RemotingCommand
from namesrv.protocol.framing import BadFrame, FrameLimits, FrameReader, complete_frames


def framed(payload):
    return struct.pack(">i", len(payload)) + payload


def read_all(reader, *reads):
    frames = []
    for data in reads:
        chunk = reader.feed(data)
        if chunk is not None:
            frames.extend(reader.frames(chunk))
            reader.keep_rest()
    return frames


def test_frames_split_anywhere_come_out_whole_and_in_order():
    stream = framed(b"one") + framed(b"two!") + framed(b"") + framed(b"three")
    for cut in range(1, len(stream)):
        reader = FrameReader()
        assert read_all(reader, stream[:cut], stream[cut:]) == [b"one", b"two!", b"", b"three"]
        assert not reader.waiting


def test_an_incomplete_first_frame_is_not_copied_out_of_the_buffer():
    reader = FrameReader()
    assert reader.feed(framed(b"x" * 100)[:50]) is not None   # first read: framed in place, rest kept
    list(reader.frames(framed(b"x" * 100)[:50]))
    reader.keep_rest()
    assert reader.waiting
    assert reader.feed(b"x" * 10) is None   # still incomplete: stays in the buffer


def test_stopping_early_keeps_the_unhandled_frames_for_the_next_read():
    reader = FrameReader()
    chunk = reader.feed(framed(b"a") + framed(b"b") + framed(b"c")[:3])
    frames = reader.frames(chunk)
    assert next(frames) == b"a"
    assert reader.unread() == framed(b"b") + framed(b"c")[:3]   # after the frame being handled
    reader.keep_rest()
    assert read_all(reader, framed(b"c")[3:]) == [b"b", b"c"]
    assert reader.unread() == b""


@pytest.mark.parametrize("prefix, reason", [
    (struct.pack(">i", -1), "negative frame length -1"),
    (struct.pack(">i", 100), "frame of 104 bytes exceeds the limit of 50"),
])
def test_impossible_lengths_are_bad_frames(prefix, reason):
    reader = FrameReader(max_frame_length=50)
    with pytest.raises(BadFrame, match=reason):
        list(reader.frames(reader.feed(prefix + b"\0" * 8)))


def test_an_overlong_header_is_refused_before_its_body_arrives():
    reader = FrameReader(limits=FrameLimits(max_header_length=64))
    start = struct.pack(">ii", 10000, 5000)   # a 5,000-byte header announced, nothing else sent
    with pytest.raises(BadFrame, match="exceeds maxHeaderLength 64"):
        list(reader.frames(reader.feed(start)))


def test_a_big_body_is_refused_from_its_header_unless_the_code_may_send_one():
    limits = FrameLimits(max_request_body_length=10)
    for code, refused in ((105, True), (103, False)):   # GET_ROUTEINFO_BY_TOPIC, REGISTER_BROKER
        whole = encode_frame(RemotingCommand(code=code, body=b"b" * 100))
        reader = FrameReader(limits=limits)
        if refused:
            with pytest.raises(BadFrame, match="maxRequestBodyLength 10"):
                list(reader.frames(reader.feed(whole[:-50])))
        else:
            assert read_all(reader, whole[:-50], whole[-50:]) == [whole[4:]]


def test_clear_forgets_everything():
    reader = FrameReader()
    read_all(reader, framed(b"abc")[:5])
    reader.clear()
    assert reader.unread() == b"" and not reader.waiting


def test_complete_frames_says_where_the_whole_frames_end():
    whole = framed(b"one") + framed(b"")
    assert complete_frames(whole + framed(b"three")[:5]) == (len(whole), 2)
    assert complete_frames(b"\0\0") == (0, 0)


def test_complete_frames_counts_up_to_a_limit_and_stops_at_an_impossible_length():
    whole = framed(b"one") + framed(b"two")
    assert complete_frames(whole + framed(b"three"), up_to=2) == (len(whole), 2)
    # a length of -4 would end where it starts: counting must stop there, not loop for ever
    assert complete_frames(framed(b"one") + struct.pack(">i", -4) + b"rest") == (len(framed(b"one")), 1)
    assert complete_frames(struct.pack(">i", -9) + b"x" * 20) == (0, 0)


def test_frames_waiting_counts_what_was_read_and_what_is_about_to_be():
    reader = FrameReader()
    assert reader.frames_waiting() == 0
    reader.buffer_more(framed(b"a") + framed(b"b")[:2])
    assert reader.frames_waiting() == 1 and reader.buffered() == 7
    assert reader.frames_waiting(framed(b"b")[2:] + framed(b"c")) == 3
    assert reader.frames_waiting(framed(b"b")[2:] + framed(b"c"), up_to=2) == 2
    assert reader.frames_waiting() == 1   # counting took nothing


def test_frames_takes_n_at_most_and_keeps_the_rest():
    reader = FrameReader()
    chunk = reader.feed(framed(b"a") + framed(b"b") + framed(b"c"))
    assert list(reader.frames(chunk, 2)) == [b"a", b"b"]
    reader.keep_rest()
    assert reader.frames_waiting() == 1
    assert list(reader.frames(reader.take(), 0)) == []
    reader.keep_rest()
    assert list(reader.frames(reader.take(), 5)) == [b"c"]


def test_a_started_frames_header_is_told_once_when_it_is_in_and_again_for_the_next_frame():
    from namesrv.protocol.codec import encode_frame
    from namesrv.protocol.command import make_request
    first = encode_frame(make_request(17, {"k": "v"}, body=b"b" * 1000))
    second = encode_frame(make_request(18, {}, body=b"c" * 1000))
    word = struct.unpack(">i", first[4:8])[0]
    header = first[8:8 + (word & 0xFFFFFF)]
    reader = FrameReader()
    assert read_all(reader, first[:12]) == []
    assert reader.started_header() is None                 # the header is not all in yet
    assert read_all(reader, first[12:8 + len(header) + 5]) == []
    assert reader.started_header() == (word >> 24, header)
    assert reader.started_header() is None                 # once per frame
    assert read_all(reader, first[8 + len(header) + 5:] + second[:200]) == [first[4:]]
    assert reader.started_header()[1] == second[8:8 + (struct.unpack(">i", second[4:8])[0] & 0xFFFFFF)]
    assert read_all(reader, second[200:]) == [second[4:]]
    assert reader.started_header() is None                 # nothing started


def test_a_whole_frame_waiting_in_the_buffer_is_not_a_started_one():
    reader = FrameReader()
    chunk = reader.feed(framed(b"\x00\x00\x00\x02{}") + framed(b"\x00\x00\x00\x02{}xyz")[:9])
    frames = reader.frames(chunk, limit=0)   # handled nothing: the whole frame is still first
    list(frames)
    reader.keep_rest()
    assert reader.started_header() is None
