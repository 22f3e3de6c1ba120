"""Writes docs/properties.md from the property table: ``python -m namesrv.config.reference > docs/properties.md``.

The reference and conf/namesrv.properties (confgen) come from the same table as the defaults,
``-p`` and GET_NAMESRV_CONFIG, so none of them can drift (tests/config compare both files with
what these functions write).
"""

import sys

from namesrv.config import ALWAYS_BLACK_LISTED, DEFAULT_BLACK_LIST, PROPERTIES, java_text

#: the property that opens each part of the table, and the part's title
SECTIONS = {
    "rocketmqHome": "Java's NamesrvConfig (4.9 and 5.x)",
    "returnOrderTopicConfigToBroker": "Java's NamesrvConfig, 5.x only",
    "controllerType": "The controller (5.x ControllerConfig): embedded or `twistd controller`",
    "bindAddress": "Java's NettyServerConfig",
    "brokerChannelExpiredTime": "Ours: limits, warm restarts, the event log, caches, read workers",
    "aclEnable": "Ours: security, isolation, metrics, the status page",
    "addressServiceNamesrvAddr": "Ours: the address service",
}

HEADER = """# Property reference

Every property `twistd namesrv` and `twistd controller` read, with its Java type and default. Names are
the Java NameServer's (NamesrvConfig, NettyServerConfig, 5.x ControllerConfig), so an existing Java
properties file keeps working; ours follow the same style. Set them in the `-c` file (one `key=value`
per line; a comment goes on a line of its own); `-p` prints every effective value and where it came from,
and GET_NAMESRV_CONFIG (`namesrv-admin getNamesrvConfig`) returns them.

*Runtime*: the only keys the network may change, with UPDATE_NAMESRV_CONFIG (`namesrv-admin
updateNamesrvConfig`) for the name server's and UPDATE_CONTROLLER_CONFIG (`updateControllerConfig`, on the
controller's port) for the controller's. A change applies at once and is kept in the instance's runtime
overlay (`runtimeConfigPath`), applied after the `-c` file at the next start; the `-c` file is never written
([running.md](running.md#changes-at-run-time-the-runtime-overlay)). Every other key (paths, ports, addresses,
security switches, the controller's membership, what is read at start only) is refused from the network,
naming the key ([security.md](security.md#configuration-from-the-network)).

A bad value, a port outside 0-65535 or a misspelt key refuses the start in one line
([running.md](running.md#when-it-will-not-start)). *Black list*: refused from the network even when
runtime, by default (`configBlackList`; {always} always). *Per instance*: the default names a
file of its own for each listening port ([running.md](running.md#two-instances-on-one-host)). This page is
generated from the table in `namesrv/config/` (`python -m namesrv.config.reference > docs/properties.md`),
as `conf/namesrv.properties` is.
"""


def render():
    black = {key for key in DEFAULT_BLACK_LIST.split(";") if key} | set(ALWAYS_BLACK_LISTED)
    out = [HEADER.format(always=", ".join("`%s`" % key for key in sorted(ALWAYS_BLACK_LISTED)))]
    for prop in PROPERTIES:
        if prop.name in SECTIONS:
            out.append("\n## %s\n\n| property | type | default | runtime | meaning |\n|---|---|---|---|---|\n"
                       % SECTIONS[prop.name])
        default = java_text(prop.default)
        notes = [note for note, applies in (("black list", prop.name in black), ("per instance", prop.per_instance))
                 if applies]
        out.append("| `%s` | %s | %s | %s | %s%s |\n" % (
            prop.name, prop.kind, "`%s`" % _cell(default) if default else "(empty)", "runtime" if prop.runtime else "",
            _cell(prop.description), " *(%s)*" % ", ".join(notes) if notes else ""))
    return "".join(out)


def _cell(text):
    """Table-cell text: ``|`` escaped, ``<port>`` kept visible (a renderer would take it for a tag)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    sys.stdout.write(render())
