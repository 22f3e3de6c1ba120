"""The address service: clients and brokers started without a name server address ask it for one.

A Java client or broker with no ``namesrvAddr`` fetches ``http://{rocketmq.namesrv.domain}/rocketmq/{subgroup}``
(``MixAll.getWSAddr``, ``TopAddressing``; port 8080 when the domain carries none) and gets
``host:port;host:port`` back. Java leaves that to a static web server an operator keeps by hand; here
the name server answers it on its HTTP port and lists only the name servers that answer a real
remoting request (``prober``), from the configured list (``namesrvlist``), as the pure model
``liveness`` decides; ``web`` is the HTTP side, ``wiring`` puts it on the Prometheus port.
"""
