"""In-process fuzzing of the codec and the framing protocol (thousands of frames, no sockets).

The contract under test: whatever bytes arrive, ``decode_frame`` returns a command or
raises ``FrameDecodeError`` (which closes the connection quietly), and
``RemotingProtocol.dataReceived`` never lets an exception escape (Twisted would log a
traceback and drop the connection without a ``bad_frame`` event).
"""

import random
import struct

from hypothesis import given, settings, strategies as st
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import FrameDecodeError, decode_frame, encode_frame
from namesrv.protocol.command import RemotingCommand
from namesrv.protocol.remoting import RemotingProtocol
from tools.fuzzframes import fuzz_frame, plan_connection, vector_drafts

VECTORS = vector_drafts()


def decodes_or_refuses(frame_without_length):
    try:
        command = decode_frame(frame_without_length)
    except FrameDecodeError:
        return None
    assert isinstance(command, RemotingCommand)
    assert isinstance(command.code, int) and -2**31 <= command.code < 2**31
    assert command.ext is None or all(isinstance(k, str) and isinstance(v, str) for k, v in command.ext.items())
    return command


@settings(max_examples=500)
@given(st.binary(max_size=300))
def test_random_bytes_decode_or_refuse(data):
    decodes_or_refuses(data)


@settings(max_examples=500)
@given(st.sampled_from([0, 1, 2, 0xFF]), st.binary(max_size=200), st.binary(max_size=50))
def test_random_headers_of_both_serialize_types(serialize_type, header, body):
    decodes_or_refuses(struct.pack(">I", (serialize_type << 24) | len(header)) + header + body)


@settings(max_examples=2000)
@given(st.integers(0, 2**32 - 1))
def test_mutated_frames_decode_or_refuse(seed):
    frame = fuzz_frame(random.Random(seed), vectors=VECTORS).data
    if len(frame) < 4:
        return
    (length,) = struct.unpack(">i", frame[:4])
    if 0 <= length <= len(frame) - 4:
        decodes_or_refuses(frame[4:4 + length])


def test_deeply_nested_json_header_is_a_bad_frame():
    """json.loads raises RecursionError (not ValueError) beyond ~1000 levels."""
    header = b'{"remark":' + b"[" * 20000 + b"]" * 20000 + b',"code":105}'
    assert decodes_or_refuses(struct.pack(">i", len(header)) + header) is None


def test_deep_json_header_with_an_escape_is_a_bad_frame_or_a_command():
    """900 levels parse fine; cleaning escaped strings must not then recurse past the stack limit."""
    header = b'{"remark":' + b"[" * 900 + b'"\\u00e9"' + b"]" * 900 + b',"code":105}'
    decodes_or_refuses(struct.pack(">i", len(header)) + header)


def test_rocketmq_remark_that_ends_the_header_is_a_bad_frame():
    """The ext length field after the remark is missing: a short read, not a struct.error."""
    header = struct.pack(">hbhii", 105, 0, 409, 1, 0) + struct.pack(">i", 4) + b"abcd"
    assert decodes_or_refuses(struct.pack(">i", (1 << 24) | len(header)) + header) is None


def test_lone_surrogate_in_an_answer_is_written_as_java_does():
    """A JSON header may carry "\\ud800"; Java's UTF-8 encoder writes '?' for it, and so must we."""
    header = b'{"code":105,"extFields":{"topic":"a\\ud800"}}'
    request = decode_frame(struct.pack(">i", len(header)) + header)
    answer = request.make_response(17, remark="topic: " + request.ext["topic"], ext={"t": request.ext["topic"]})
    for serialize_type in (0, 1):
        answer.serialize_type = serialize_type
        echoed = decode_frame(encode_frame(answer)[4:])
        assert echoed.remark == "topic: a?" and echoed.ext == {"t": "a?"}


class AnsweringDispatcher:
    """Echoes the request's remark and ext fields, as processors echo names in remarks."""

    def __init__(self):
        self.seen = 0

    def dispatch(self, request, connection):
        self.seen += 1
        if request.is_oneway:
            return None
        return request.make_response(0, remark="ok %s" % (request.remark,), ext=request.ext)


def answers(data):
    out = []
    while data:
        (length,) = struct.unpack(">i", data[:4])
        out.append(decode_frame(data[4:4 + length]))
        data = data[4 + length:]
    return out


@settings(max_examples=300)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_protocol_never_raises_on_a_fuzzed_stream(seed, cuts):
    """Plans of fuzzed frames, cut at arbitrary points: answers are whole frames, bad ones close."""
    rng = random.Random(seed)
    stream = b"".join(f.data for f in plan_connection(rng, vectors=VECTORS))
    bad = []
    proto = RemotingProtocol(AnsweringDispatcher(), on_bad_frame=lambda p, reason: bad.append(reason))
    transport = StringTransport()
    proto.makeConnection(transport)
    pos = 0
    i = 0
    while pos < len(stream) and not transport.disconnecting:
        step = cuts[i % len(cuts)] * (1 + rng.randrange(64))
        proto.dataReceived(stream[pos:pos + step])
        pos += step
        i += 1
    for answer in answers(transport.value()):
        assert answer.is_response and answer.remark.startswith("ok")
    if transport.disconnecting:
        assert bad, "the connection was closed without a bad_frame reason"
    proto.connectionLost(None)
