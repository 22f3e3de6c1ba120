"""What the lab's processes write down: JSON lines, each with a ``time.monotonic()`` stamp (one clock for
every process of the machine, whatever namespace it runs in), appended by several threads."""

import json
import threading
import time


class JsonLines:
    """``record(kind_value, **fields)``: one line ``{key: kind_value, "t": now, **fields}``."""

    def __init__(self, path, key):
        self.file = open(path, "a", buffering=1)
        self.key = key
        self.lock = threading.Lock()

    def __call__(self, kind, **fields):
        fields[self.key] = kind
        fields.setdefault("t", time.monotonic())
        with self.lock:
            self.file.write(json.dumps(fields, sort_keys=True) + "\n")


def read_jsonl(path):
    """Every whole line of ``path`` (a line being written is left for later), or [] if it is not there yet."""
    records = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    return records
