"""``namesrv-admin``: the name-server half of Java's ``mqadmin``, as a plain remoting client.

It sends the same request codes as ``DefaultMQAdminExt`` does, so it works against this
server and the Java NameServer alike. Sub-command names and options follow mqadmin's
(``clusterList``, ``topicRoute -t``, ``updateKvConfig -s -k -v``, ...).
"""
