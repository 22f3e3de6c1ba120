"""The snippets of the README and the guide (docs/*.md): every ``properties`` and shell block, with how
the test runs it.

A block may be preceded (blank lines between allowed) by an HTML comment, invisible on the rendered
page, that says how it runs:

- ``<!-- snippet: not run: REASON -->`` (shell) or ``<!-- snippet: not started: REASON -->``
  (properties: loaded, not started): not runnable here, and why;
- ``<!-- snippet: with a server[: OPTIONS] -->`` (shell): a name server runs first, as ``make run``
  starts it (``twistd -n namesrv --statusListenPort 9877 OPTIONS``), in the block's own network. A
  comment line of the block that starts with ``RESTART_LINE`` is where the reader restarts that server
  in its terminal: the test stops it with SIGINT, as Ctrl-C does, starts it again the same way, and goes
  on with the block once it answers and every stand-in broker of the block (tools.demo_broker) has
  registered again (tests/docs/sandbox.py);
- ``<!-- snippet: serves -->`` (shell): each line starts a server in the foreground; it must be
  running, and answering, 5 s later (and is then stopped);
- ``; needs: COMMAND ...`` after any of these: programs the block runs that not every machine has (CI
  installs them, .ci/run); without one the block is skipped, naming it;
- ``; background: ...`` after any of these, a note for readers (ignored).

Without a comment a shell block runs as one ``bash -e`` script and must exit 0, and a properties
block is loaded by the real config loader and then started as ``twistd namesrv -c`` with it.
"""

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: in a ``with a server`` block: the reader restarts the server here (the test does it for the reader)
RESTART_LINE = "# in the first terminal: Ctrl-C, then `make run` again"
SHELL = ("sh", "shell", "bash", "console")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_MARK = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->$", re.S)


class Snippet:
    def __init__(self, page, line, kind, text, mark):
        self.page, self.line, self.kind, self.text, self.mark = page, line, kind, text, mark

    @property
    def ident(self):
        return "%s:%d" % (self.page, self.line)

    @property
    def mode(self):
        """``run``, ``not run``, ``not started``, ``with a server`` or ``serves``."""
        head = self.mark.split(";")[0].strip()
        for mode in ("not run", "not started", "with a server", "serves", "run"):
            if head.startswith(mode):
                return mode
        return "start" if self.kind == "properties" else "run"

    @property
    def reason(self):
        """What follows ``not run:`` / ``not started:``."""
        return self.mark.split(";")[0].partition(":")[2].strip()

    @property
    def needs(self):
        """The programs ``; needs: ...`` names."""
        for part in self.mark.split(";")[1:]:
            key, _, value = part.partition(":")
            if key.strip() == "needs":
                return value.split()
        return []

    @property
    def server_options(self):
        """``with a server: OPTIONS``: the options."""
        return self.mark.split(";")[0].partition(":")[2].strip() if self.mode == "with a server" else ""

    def __repr__(self):
        return "<snippet %s %s %s>" % (self.ident, self.kind, self.mode)


def pages():
    """README.md and every page of docs/, relative to the repository."""
    docs = sorted(os.path.join("docs", name) for name in os.listdir(os.path.join(REPO, "docs")) if name.endswith(".md"))
    return ["README.md"] + docs


def snippets(page):
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        text = f.read()
    found = []
    for match in _FENCE.finditer(text):
        language = match.group(1).lower()
        if language not in SHELL and language != "properties":
            continue
        before = text[:match.start()].rstrip()
        mark = _MARK.match(before[before.rfind("<!--"):]) if before.endswith("-->") else None
        found.append(Snippet(page, text.count("\n", 0, match.start()) + 1,
                             "properties" if language == "properties" else "shell", match.group(2),
                             " ".join(mark.group(1).split()) if mark else ""))
    return found


def every_snippet():
    return [snippet for page in pages() for snippet in snippets(page)]
