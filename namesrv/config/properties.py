"""Java `.properties` text: reading (as ``java.util.Properties.load`` does) and writing.

Reading follows the Java grammar: ``#``/``!`` comment lines, ``=``/``:``/whitespace
between key and value, backslash escapes (``\\t \\n \\r \\f``, ``\\uXXXX``, anything else
stands for itself) and lines continued by an odd number of trailing backslashes. Only
``\\n``, ``\\r`` and ``\\r\\n`` end a line (``\\f`` is whitespace, not a line break).

Writing produces ``key=value`` lines like Java's ``MixAll.properties2String``. Java
writes values raw, which its own readers then misread when a value holds a backslash,
a line break, leading blanks or non-ASCII (``Properties.load(InputStream)`` is
ISO-8859-1). We escape exactly those characters, so ordinary values come out byte for
byte as Java writes them and every value reads back unchanged, in Java and here.
"""

import re

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_BLANKS = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_HEX = frozenset("0123456789abcdefABCDEF")


class PropertiesError(ValueError):
    """Text Java's ``Properties.load`` refuses too (a malformed ``\\uXXXX`` escape)."""


def _logical_lines(text):
    """Natural lines joined into logical ones; comment and blank lines dropped."""
    pending = None
    for raw in _LINE_BREAK.split(text):
        line = raw.lstrip(_BLANKS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _unescape(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        i += 1
        if ch != "\\":
            out.append(ch)
            continue
        if i >= n:
            break
        ch = text[i]
        i += 1
        if ch == "u":
            digits = text[i:i + 4]
            if len(digits) != 4 or not set(digits) <= _HEX:
                raise PropertiesError("Malformed \\uxxxx encoding: \\u%s" % digits)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(ch, ch))
    return _join_surrogates("".join(out))


def _join_surrogates(text):
    """``\\ud83d\\ude00`` is one character in Java (UTF-16); make it one here too."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _split(line):
    """The key ends at the first unescaped '=', ':' or blank; blanks and one separator follow."""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _BLANKS:
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def parse_properties(text):
    """An insertion-ordered dict of the properties in ``text`` (a later key wins, as in Java)."""
    result = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        result[_unescape(key)] = _unescape(value)
    return result


def decode_properties_bytes(data):
    """Text of a properties file: UTF-8 (a BOM is dropped), else ISO-8859-1 as Java reads it."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def load_properties_file(path):
    """The properties of the file at ``path`` (OSError if it cannot be read)."""
    with open(path, "rb") as f:
        return parse_properties(decode_properties_bytes(f.read()))


def _escape_char(ch):
    if ch == "\\":
        return "\\\\"
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    if ch == "\f":
        return "\\f"
    code = ord(ch)
    if code > 0x7E:
        if code > 0xFFFF:
            return "".join("\\u%04X" % unit for unit in _utf16_units(ch))
        return "\\u%04X" % code
    return ch


def _utf16_units(ch):
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def escape_value(value):
    """``value`` as it must be written for Properties.load to read it back unchanged."""
    text = "".join(_escape_char(ch) for ch in value)
    if text[:1] in (" ", "\t"):
        text = "\\" + text  # a leading blank would be skipped by the reader
    return text


def escape_key(key):
    """A key additionally escapes the separators, blanks and a leading comment mark."""
    text = "".join(("\\" + ch) if ch in "=: \t" else _escape_char(ch) for ch in key)
    if text[:1] in ("#", "!"):
        text = "\\" + text
    return text


def format_properties(items):
    """``key=value`` lines (``items`` are (key, value) strings), as MixAll.properties2String writes them."""
    return "".join("%s=%s\n" % (escape_key(key), escape_value(value)) for key, value in items)
