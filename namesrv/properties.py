"""Java `.properties` text: reading (as java.util.Properties.load does) and writing."""

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    pass


def _logical_lines(text):
    """Join continuation lines (an odd number of trailing backslashes) and drop comments/blank lines."""
    pending = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending is None else raw.lstrip(" \t\f")
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
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= len(text):
            break
        ch = text[i]
        if ch == "u":
            digits = text[i + 1:i + 5]
            if len(digits) != 4:
                raise PropertiesError("malformed \\uxxxx encoding: \\u%s" % digits)
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise PropertiesError("malformed \\uxxxx encoding: \\u%s" % digits)
            i += 5
            continue
        out.append(_ESCAPES.get(ch, ch))
        i += 1
    return "".join(out)


def _split(line):
    """Key ends at the first unescaped '=', ':' or whitespace; separators around it are skipped."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text):
    """An ordered dict of the properties in ``text`` (later keys win, as in Java)."""
    result = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        result[_unescape(key)] = _unescape(value)
    return result


def load_properties_file(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # what Java's Properties.load(InputStream) assumes
    return parse_properties(text)


def format_properties(items):
    """``key=value`` lines, raw like the Java NameServer writes them (MixAll.properties2String)."""
    return "".join("%s=%s\n" % (key, value) for key, value in items)
