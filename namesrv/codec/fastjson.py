"""JSON the way Java peers (fastjson 1.x) write and read RocketMQ bodies.

Reading: fastjson writes ``Map<Long, String>`` keys unquoted (``{0:"127.0.0.1:10911"}``),
which Python's ``json`` rejects. ``loads`` tries the C decoder first (valid JSON, i.e. every
broker registration body, costs nothing extra); only when that fails does it run a
tokenizing pre-pass that quotes bare integers in key position *outside string literals*
and turns them back into ``int`` keys. Quoted keys stay strings.

Writing, two dialects:
- ``dumps_plain``: fastjson defaults. Compact, ``None`` omitted (object fields and map
  values), ``int`` keys unquoted, non-ASCII raw (UTF-8 on the wire).
- ``dumps_standard``: fastjson with BrowserCompatible + QuoteFieldNames + MapSortField, as
  routes are sent to ``version >= 401`` clients: keys quoted, ``/`` and every char
  outside printable ASCII escaped (``\\uXXXX``, upper-case hex, UTF-16 units), longs
  beyond +-2^53-1 written as strings.

Beans are plain dicts here; both dialects write every dict with sorted keys (int keys in
numeric order), which gives fastjson's alphabetical bean fields and MapSortField for maps.
Objects with a ``to_json()`` method are written as what it returns.
"""

import json
import re

__all__ = ["loads", "dumps_plain", "dumps_standard", "JSONDecodeError"]

JSONDecodeError = json.JSONDecodeError

_MAX_SAFE_LONG = 9007199254740991

# A whole string literal (kept as is) or a bare integer right after "{" or "," and
# followed by ":" -- a key fastjson left unquoted. Because string literals are consumed
# whole, digits, commas and colons inside strings are never touched.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|(?<=[{,])(\s*)(-?\d+)(?=\s*:)', re.S)
_MAYBE_INT_KEY = re.compile(r'[{,]\s*-?\d+\s*:')
_NUL_RUNS = re.compile(r"(?:\\u0000)+", re.I)


def loads(data):
    """Decode fastjson output (``bytes`` as UTF-8, or ``str``); raises ``ValueError``.

    A ``\\uD800``-style escape can put a lone UTF-16 surrogate in a string, which Python
    cannot encode back to UTF-8 later (Java writes ``?`` for it): such strings are
    cleaned here, so nothing unencodable ever reaches the tables.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        text = bytes(data).decode("utf-8")
    else:
        text = data
    value = _loads(text)
    if "\\u" in text:
        try:
            value = clean_surrogates(value)
        except RecursionError:
            raise ValueError("JSON nested too deeply")
    return value


def clean_surrogates(value):
    """``value`` with lone surrogates in every string (keys too) replaced by ``?``, like Java's encoder."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if _has_surrogate(value) else value
    if isinstance(value, dict):
        return {clean_surrogates(k): clean_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_surrogates(v) for v in value]
    return value


def _has_surrogate(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _loads(text):
    try:
        return json.loads(text)
    except JSONDecodeError as error:
        if not _MAYBE_INT_KEY.search(text):
            raise
        first_error = error
    mark = _pick_mark(text)
    escaped = "\\u0000" * len(mark)

    def quote(match):
        if match.group(2) is None:
            return match.group(0)
        return '%s"%s%s"' % (match.group(1), escaped, match.group(2))

    def pairs(items):
        result = {}
        for key, value in items:
            if key.startswith(mark):
                key = int(key[len(mark):])
            result[key] = value
        return result

    try:
        return json.loads(_TOKENS.sub(quote, text), object_pairs_hook=pairs)
    except JSONDecodeError:
        raise first_error from None  # report the position in the text we were given


def _pick_mark(text):
    """A run of NULs longer than any the text itself can decode to: keys we quoted start with it.

    (A raw NUL inside a string is invalid JSON, so only ``\\u0000`` escapes count.)
    """
    longest = max((len(run) // 6 for run in _NUL_RUNS.findall(text)), default=0)
    return "\x00" * (longest + 1)


# -- writing ----------------------------------------------------------------------

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_PLAIN_SPECIAL = re.compile('[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029]')
_STANDARD_SPECIAL = re.compile('[\x00-\x1f"\\\\/\x7f-\U0010ffff]')


def _escape_char(match):
    char = match.group(0)
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if char == "/":
        return "\\/"
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return "\\u%04X\\u%04X" % (0xD800 | (code >> 10), 0xDC00 | (code & 0x3FF))
    return "\\u%04X" % code


def _plain_string(text):
    if _PLAIN_SPECIAL.search(text) is None:
        return '"%s"' % text
    return '"%s"' % _PLAIN_SPECIAL.sub(_escape_char, text)


def _standard_string(text):
    if _STANDARD_SPECIAL.search(text) is None:
        return '"%s"' % text
    return '"%s"' % _STANDARD_SPECIAL.sub(_escape_char, text)


def _key_order(item):
    key = item[0]
    return (0, key, "") if isinstance(key, int) else (1, 0, key)


class _Writer:
    def __init__(self, standard):
        self.standard = standard
        self.string = _standard_string if standard else _plain_string

    def key(self, key):
        if isinstance(key, str):
            return self.string(key)
        if isinstance(key, bool):
            key = "true" if key else "false"
        elif isinstance(key, int):
            key = str(key)
        else:
            key = str(key)
            return self.string(key)
        return '"%s"' % key if self.standard else key

    def write(self, obj, out):
        if obj is None:
            out.append("null")
        elif isinstance(obj, str):
            out.append(self.string(obj))
        elif obj is True:
            out.append("true")
        elif obj is False:
            out.append("false")
        elif isinstance(obj, int):
            if self.standard and not -_MAX_SAFE_LONG <= obj <= _MAX_SAFE_LONG:
                out.append('"%d"' % obj)
            else:
                out.append(str(int(obj)))
        elif isinstance(obj, float):
            out.append(repr(obj) if obj == obj and obj not in (float("inf"), float("-inf")) else "null")
        elif isinstance(obj, dict):
            items = [item for item in obj.items() if item[1] is not None]
            items.sort(key=_key_order)
            out.append("{")
            first = True
            for key, value in items:
                if not first:
                    out.append(",")
                first = False
                out.append(self.key(key))
                out.append(":")
                self.write(value, out)
            out.append("}")
        elif isinstance(obj, (list, tuple, set, frozenset)):
            out.append("[")
            first = True
            for value in obj:
                if not first:
                    out.append(",")
                first = False
                self.write(value, out)
            out.append("]")
        elif hasattr(obj, "to_json"):
            self.write(obj.to_json(), out)
        else:
            raise TypeError("cannot write %r as JSON" % (obj,))


_PLAIN = _Writer(False)
_STANDARD = _Writer(True)


def dumps_plain(obj):
    """fastjson's default output, as ``str`` (encode it as UTF-8 for the wire)."""
    out = []
    _PLAIN.write(obj, out)
    return "".join(out)


def dumps_standard(obj):
    """Standard JSON as fastjson writes it with BrowserCompatible + MapSortField (pure ASCII ``str``)."""
    out = []
    _STANDARD.write(obj, out)
    return "".join(out)
