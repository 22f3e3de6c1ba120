"""The listening side: the remoting factory, TLS sniffing, broker housekeeping on close, the shared socket."""
