"""The README's front page (its text before the first section) says what differs from Java where an
operator meets it first: the bind default, and the one line that makes it Java's."""

import os
import re

from namesrv.config import property_named
from tests.docs.snippets import REPO, snippets


def front_page():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return text[:text.index("\n## ")]


def test_the_front_page_states_the_bind_default_and_the_java_like_line():
    text = front_page()
    default = property_named("bindAddress").default
    assert re.search(r"listens on \*\*%s\*\* only" % re.escape(default), text)
    (line,) = [s for s in snippets("README.md") if s.kind == "properties" and s.line < text.count("\n") + 1]
    assert line.text.strip() == "bindAddress=0.0.0.0"
    assert "where a Java name server listens on every interface" in " ".join(text.split())
