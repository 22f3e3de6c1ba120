"""What controllers send each other and keep on disk, as data: msgpack with a schema, never pickle.

pysyncobj, whose Raft we run, pickles three things: its messages (its own TCP transport, which we
replace with ``members.py``), the commands in its log (``@replicated`` calls ``pickle.dumps``
and every member's apply calls ``pickle.loads``), and its snapshots. A pickle from the network
is code from the network. So:

- ``SafePickle`` stands in for the ``pickle`` module pysyncobj's core uses (``hooks.py`` puts it
  there): the same ``dumps``/``loads`` names, but msgpack underneath, with no object types;
- every message a member receives is checked against ``check_message`` before pysyncobj sees
  it: known types only, known keys, the right types, and every log entry's command checked by
  ``check_command`` (a no-op, our replicated call with a list of event dicts, or a configuration
  of the group, ``membership.py``). Forwarded commands, pysyncobj's own membership and
  code-version commands are refused: we never send them, so a member that does is broken or hostile.

A message that fails is a ``CodecError``; the link that carried it is closed (``members.py``).
"""

from collections.abc import Iterable
from typing import Any, BinaryIO, NoReturn

from namesrv.controller.replication import membership
from namesrv.controller.replication.values import CodecError, pack, unpack

#: pysyncobj's command types (pysyncobj.syncobj._COMMAND_TYPE); the first byte of every log command
COMMAND_REGULAR = 0
COMMAND_NO_OP = 1

#: the id pysyncobj gives ``apply_events`` (our replicated methods sorted by name; ``apply_members`` is 1)
APPLY_EVENTS_ID = 0


class SafePickle:
    """The ``pickle`` that pysyncobj's core calls, as data.

    pysyncobj calls ``dumps`` for a replicated call ``(funcID, args)`` and for an oversized entry
    ``(command, index, term)``, and ``loads`` to undo them; both are tuples at the top, which
    msgpack turns into lists, so ``loads`` gives a top-level list back as a tuple.
    ``dump``/``load`` (pysyncobj's own snapshot format) are refused: we give it our own
    serializer (``snapshot.py``).
    """

    @staticmethod
    def dumps(value: Any, protocol: int | None = None) -> bytes:
        return pack(value)

    @staticmethod
    def loads(data: bytes) -> Any:
        value = unpack(data)
        return tuple(value) if isinstance(value, list) else value

    @staticmethod
    def to_bytes(data: bytes | str) -> bytes:
        return data if isinstance(data, bytes) else data.encode("utf-8")

    @staticmethod
    def dump(value: Any, file: BinaryIO, protocol: int | None = None) -> NoReturn:
        raise CodecError("pysyncobj's pickled snapshots are not used here")

    @staticmethod
    def load(file: BinaryIO) -> NoReturn:
        raise CodecError("pysyncobj's pickled snapshots are not used here")


# -- commands ---------------------------------------------------------------------------------------
def encode_events(events: Iterable[dict[str, Any]]) -> bytes:
    """The command pysyncobj's ``@replicated`` would build for ``apply_events(events)``."""
    return bytes([COMMAND_REGULAR]) + pack([APPLY_EVENTS_ID, [list(events)]])


def check_command(command: object) -> None:
    """A log command we accept: a no-op, ``apply_events`` with a list of event dicts, or a configuration."""
    if not isinstance(command, bytes) or not command:
        raise CodecError("a log command must be non-empty bytes")
    kind = command[0]
    if kind == COMMAND_NO_OP:
        if len(command) != 1:
            raise CodecError("a no-op command carries nothing")
        return
    if kind != COMMAND_REGULAR:
        raise CodecError("log command type %d refused (pysyncobj's membership and version changes are not used)"
                         % kind)
    if membership.is_configuration(command):
        membership.decode_command(command)
        return
    call = unpack(command[1:])
    if not (isinstance(call, list) and len(call) == 2 and call[0] == APPLY_EVENTS_ID
            and isinstance(call[1], list) and len(call[1]) == 1 and isinstance(call[1][0], list)):
        raise CodecError("a regular command must be apply_events([events])")
    for event in call[1][0]:
        check_event(event)


_SCALARS = (str, int, bool, type(None))


def check_event(event: object) -> None:
    """An event dict as the controller state applies them: string keys, scalar or flat-list values.
    The state checks the meaning (``state.apply`` raises ValueError for an event it cannot apply)."""
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise CodecError("an event is a dict with a string type")
    for key, value in event.items():
        if isinstance(value, list):
            if not all(isinstance(item, _SCALARS) for item in value):
                raise CodecError("event field %s holds a nested value" % key)
        elif not isinstance(value, _SCALARS):
            raise CodecError("event field %s has type %s" % (key, type(value).__name__))


# -- messages -----------------------------------------------------------------------------------------
def _int(message: dict[str, Any], key: str, allow_none: bool = False) -> None:
    value = message.get(key)
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CodecError("%s: %s must be a non-negative integer" % (message.get("type"), key))


def _bool(message: dict[str, Any], key: str) -> None:
    if not isinstance(message.get(key), bool):
        raise CodecError("%s: %s must be a boolean" % (message.get("type"), key))


def _keys(message: dict[str, Any], allowed: set[str]) -> None:
    extra = set(message) - allowed
    if extra:
        raise CodecError("%s: unknown fields %s" % (message.get("type"), ", ".join(sorted(map(str, extra)))))


def _entries(message: dict[str, Any]) -> list[tuple[bytes, int, int]]:
    entries = message.get("entries", [])
    if not isinstance(entries, list):
        raise CodecError("append_entries: entries must be a list")
    checked = []
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 3):
            raise CodecError("append_entries: an entry is [command, index, term]")
        command, index, term = entry
        check_command(command)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (index, term)):
            raise CodecError("append_entries: entry index and term must be non-negative integers")
        checked.append((command, index, term))
    return checked


def _serialized(message: dict[str, Any]) -> tuple[bytes, bool, bool] | None:
    chunk = message.get("serialized")
    if chunk is None:
        return None
    if not (isinstance(chunk, list) and len(chunk) == 3 and isinstance(chunk[0], bytes)
            and isinstance(chunk[1], bool) and isinstance(chunk[2], bool)):
        raise CodecError("append_entries: serialized must be [bytes, first, last]")
    return tuple(chunk)


def check_message(message: object) -> dict[str, Any]:
    """A pysyncobj message from a member, checked and normalised (entries as tuples); CodecError if not."""
    if not isinstance(message, dict):
        raise CodecError("a Raft message is a map")
    kind = message.get("type")
    if kind == "request_vote":
        _keys(message, {"type", "term", "last_log_index", "last_log_term"})
        for key in ("term", "last_log_index", "last_log_term"):
            _int(message, key)
    elif kind == "response_vote":
        _keys(message, {"type", "term"})
        _int(message, "term")
    elif kind == "next_node_idx":
        _keys(message, {"type", "next_node_idx", "reset", "success"})
        _int(message, "next_node_idx")
        _bool(message, "reset")
        _bool(message, "success")
    elif kind == "append_entries":
        _int(message, "term")
        _int(message, "commit_index")
        if "serialized" in message:
            _keys(message, {"type", "term", "commit_index", "serialized"})
            message["serialized"] = _serialized(message)
        else:
            _keys(message, {"type", "term", "commit_index", "entries", "prevLogIdx", "prevLogTerm"})
            if "prevLogIdx" not in message:
                raise CodecError("append_entries: prevLogIdx missing")
            _int(message, "prevLogIdx", allow_none=True)
            _int(message, "prevLogTerm", allow_none=True)
            message["entries"] = _entries(message)
    else:
        raise CodecError("Raft message type %r refused" % (kind,))
    return message
