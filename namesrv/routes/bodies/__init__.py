"""The route requests' bodies: ``decode`` reads what clients and brokers send, ``encode`` writes the answers."""
