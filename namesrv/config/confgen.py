"""Writes conf/namesrv.properties from the property table: ``python -m namesrv.config.confgen > conf/namesrv.properties``."""

import sys

from namesrv.config import PROPERTIES, java_text

HEADER = """# RocketMQ NameServer (Python) properties: every key with its default.
# Names are the Java NameServer's, so an existing namesrv.properties keeps working.
# Use: twistd -n namesrv -c conf/namesrv.properties
# Comments go on lines of their own: text after a value is part of the value.
# The files an instance writes are left to their defaults (commented out below), which follow
# listenPort: a copy of this file with another listenPort is an instance of its own.
# Keys marked (runtime) may also be changed while it runs (namesrv-admin updateNamesrvConfig, or
# updateControllerConfig for the controller's); such changes go to the instance's runtime overlay
# (runtimeConfigPath), applied after this file at start: the server never writes this file.
"""


def render():
    lines = [HEADER]
    for prop in PROPERTIES:
        if prop.per_instance:
            lines.append("\n# %s\n# (its default follows listenPort: set it only to move this instance's file)\n"
                         "#%s=%s\n" % (prop.description, prop.name, java_text(prop.default)))
        else:
            lines.append("\n# %s%s\n%s=%s\n" % (prop.description, " (runtime)" if prop.runtime else "", prop.name,
                                                java_text(prop.default)))
    return "".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
