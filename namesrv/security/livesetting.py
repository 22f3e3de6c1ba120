"""A property read on every request but parsed only when its text changes."""

from twisted.logger import Logger

log = Logger()


class LiveSetting:
    """``get()``: ``parse(config.get(name))``, parsed again only after the text changed; a bad new text keeps
    the previous value (logged once per change), a bad first text raises ValueError naming the property."""

    def __init__(self, config, name, parse):
        self.config, self.name, self.parse = config, name, parse
        self._text = object()
        self._value = None

    def get(self):
        text = self.config.get(self.name)
        if text != self._text:
            try:
                self._value = self.parse(text)
            except ValueError as e:
                if self._value is None:   # at start: refused, naming the property
                    raise ValueError("%s=%s: %s" % (self.name, text, e))
                log.error("{name}={text!r} ignored, keeping the previous value: {error}",
                          name=self.name, text=text, error=str(e))
            self._text = text
        return self._value
