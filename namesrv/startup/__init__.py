"""What a server checks before it starts, so that a start that cannot work fails in one line.

``twistd namesrv`` and ``twistd controller`` run these checks in ``makeService``, before twistd
daemonizes: a busy port, a file another running instance owns or a bad property is one line on
the terminal that started it, with what to do, and a non-zero exit, in the foreground and in
daemon mode alike (after the fork, twistd could only report a truncated exception).
"""

import sys


class StartupError(Exception):
    """A start that cannot work; the message is one line naming the property or port and what to do."""


def refuse(program, message, starting=True):
    """Print ``message`` as one line on stderr and exit 1 (no traceback, no usage text)."""
    sys.stderr.write("%s: %s%s\n" % (program, "refusing to start: " if starting else "",
                                     " ".join(str(message).split("\n"))))
    sys.stderr.flush()
    raise SystemExit(1)


def configure(program, config_file=None, overrides=None, printing=False, bind_warning=True):
    """The configuration of a start: the ``-c`` file, then ``overrides`` (the command line's
    ``{property: text}``). A bad value or a misspelt key refuses (one line); keys that are not
    properties are logged. With ``printing`` (``-p``): print the properties and exit 0, each key
    that is not one a warning on stderr (a misspelt one too: -p only shows). ``bind_warning``: warn
    of a Java-style file without bindAddress (startup/javastyle.py); off for a program whose clients'
    port is not on bindAddress (``twistd controller``: its port is its address in controllerDLegerPeers)."""
    from twisted.logger import Logger

    from namesrv.config import ConfigError, NamesrvConfig
    from namesrv.startup.javastyle import java_file_without_bind

    config = NamesrvConfig()
    notes = []
    try:
        if config_file:
            refusals, notes = config.unknown_keys(config.load_file(config_file), config_file)
            if refusals and not printing:
                raise ConfigError(refusals[0])
            notes = refusals + notes
        if overrides:
            config.update(overrides, source="command line")
    except (ConfigError, OSError) as e:
        refuse(program, e, starting=not printing)
    if printing:
        for note in notes:
            sys.stderr.write("%s: warning: %s (not printed)\n" % (program, note))
        sys.stderr.flush()
        sys.stdout.write(config.to_properties_text(extras=False))
        sys.stdout.flush()
        raise SystemExit(0)
    log = Logger(namespace=program)
    for note in notes:
        log.warn("{note}", note=note)
    warning = java_file_without_bind(config_file, overrides) if bind_warning else None
    if warning is not None:
        log.warn("{warning}", warning=warning)
    for name, text in config.informational_settings():
        log.warn("{name}={text} is set, but {name} tunes the Java server only (its threads, pools or Netty "
                 "buffers): accepted, it changes nothing here", name=name, text=text)
    return config
