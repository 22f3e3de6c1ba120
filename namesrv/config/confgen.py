"""Writes conf/namesrv.properties from the property table: ``python -m namesrv.config.confgen > conf/namesrv.properties``."""

import sys

from namesrv.config import PROPERTIES, java_text

HEADER = """# RocketMQ NameServer (Python) properties: every key with its default.
# Names are the Java NameServer's, so an existing namesrv.properties keeps working.
# Use: twistd -n namesrv -c conf/namesrv.properties
"""


def render():
    lines = [HEADER]
    for prop in PROPERTIES:
        lines.append("\n# %s\n%s=%s\n" % (prop.description, prop.name, java_text(prop.default)))
    return "".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
