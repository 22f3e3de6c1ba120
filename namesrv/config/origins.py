"""Where each value of the effective configuration came from, for ``-p`` and the start log.

A start applies, in this order: the defaults, the ``-c`` file, the command line (``--listenPort``, ``--host``,
``--statusListenPort``), then the runtime overlay (namesrv/config/overlay.py). The command line and the overlay
never hold the same key (the overlay holds runtime keys only, none of which has an option), so the order of
those two changes nothing. Java's ``mqnamesrv -p`` prints ``key=value`` lines only; ours stays a valid
properties file, so the origins are comment lines before them (no ``=`` in them: scripts that keep the lines
holding one still read the same pairs).
"""

import textwrap

DEFAULT = "the defaults"
CONFIG_FILE = "the -c file"
COMMAND_LINE = "the command line"
OVERLAY = "the runtime overlay"

#: the order a start applies them, which ``-p`` follows
ORDER = (CONFIG_FILE, COMMAND_LINE, OVERLAY)

WIDTH = 110


def origin_comments(config, config_file=None):
    """``# ...`` lines naming, for each origin but the defaults, the keys whose value came from it."""
    where = {CONFIG_FILE: config_file, OVERLAY: config.runtimeConfigPath}
    lines = ["# effective configuration: the defaults, then %s" % ", then ".join(ORDER)]
    for origin in ORDER:
        names = config.names_from(origin)
        if not names:
            continue
        lines.append("# from %s%s:" % (origin, " %s" % where[origin] if where.get(origin) else ""))
        lines.extend(textwrap.wrap(", ".join(_outranked(config, name) for name in names), WIDTH,
                                   initial_indent="#   ", subsequent_indent="#   ", break_on_hyphens=False,
                                   break_long_words=False))
    lines.append("# every other key has its default")
    return "".join(line + "\n" for line in lines)


def _outranked(config, name):
    replaced = config.replaced_origin(name)
    return "%s (over %s's value)" % (name, replaced) if replaced else name
