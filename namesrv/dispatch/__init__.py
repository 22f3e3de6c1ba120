"""From a decoded request to its processor: the registry, request classes, isolation, refusals."""
