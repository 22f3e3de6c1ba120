"""The remoting protocol: request codes, commands, header codecs and framing."""
