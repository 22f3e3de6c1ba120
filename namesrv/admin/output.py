"""What a command prints: aligned columns for people, JSON (``--json``) for scripts."""

import json


class Output:
    """``data`` is what ``--json`` prints; ``lines`` are the human form; ``failed`` sets exit status 1."""

    def __init__(self, data, lines=(), failed=False, errors=()):
        self.data = data
        self.lines = list(lines)
        self.failed = failed
        self.errors = list(errors)


def table(headers, rows):
    """Left-aligned columns, two spaces apart, headers prefixed with ``#`` as mqadmin prints them."""
    headers = ["#" + h for h in headers]
    rows = [["" if cell is None else str(cell) for cell in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    return [(fmt % tuple(row)).rstrip() for row in [headers] + rows]


def to_json(data):
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
