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


def configure(program, config_file=None, overrides=None, printing=False, settle=None, bind_warning=True):
    """The configuration of a start: the ``-c`` file, then ``overrides`` (the command line's
    ``{property: text}``), then ``settle(config)`` (what a program derives from those: the controller's
    port), then the runtime overlay (namesrv/config/overlay.py). A bad value, a misspelt key or an
    overlay key that is not runtime refuses (one line); keys that are not properties are logged. With
    ``printing`` (``-p``): print where the values came from (comment lines) and the properties, and exit
    0, each key that is not one a warning on stderr (a misspelt one too: -p only shows). ``bind_warning``:
    warn of a Java-style file without bindAddress (startup/javastyle.py); off for a program whose clients'
    port is not on bindAddress (``twistd controller``: its port is its address in controllerDLegerPeers)."""
    # here, not at the top: the taps import this module when twistd only lists its plugins
    from twisted.logger import Logger

    from namesrv.config import ConfigError, NamesrvConfig
    from namesrv.config.origins import COMMAND_LINE, origin_comments
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
            config.update(overrides, source="command line", origin=COMMAND_LINE)
        if settle is not None:
            settle(config)
        outranked = config.load_overlay()
    except (ValueError, OSError) as e:   # ConfigError, or what settle found wrong
        refuse(program, e, starting=not printing)
    if printing:
        for note in notes:
            sys.stderr.write("%s: warning: %s (not printed)\n" % (program, note))
        sys.stderr.flush()
        sys.stdout.write(origin_comments(config, config.configStorePath if config_file else None))
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
    _log_overlay(log, config, outranked)
    return config


def _log_overlay(log, config, outranked):
    """Say which values the runtime overlay gave, and loudly those it gave over the -c file's."""
    # here, not at the top: see configure
    from namesrv.config.origins import OVERLAY
    from namesrv.config.table import java_text

    names = config.names_from(OVERLAY)
    if names:
        log.info("runtime overlay {path}: {values}", path=config.runtimeConfigPath,
                 values=", ".join("%s=%s" % (name, java_text(config.get(name))) for name in names))
    if outranked:
        log.warn("runtime overlay {path} outranks the -c file for {keys} (changed over the network since): "
                 "delete those lines from the overlay, with the server stopped, to use the -c file's values",
                 path=config.runtimeConfigPath, keys=", ".join(outranked))
