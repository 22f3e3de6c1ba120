"""HTML for the status page: every value escaped, every list one page long.

Each section is a fragment the browser script can fetch again (``/fragment/<name>``) to
stay live without reloading the page: the broker table and the recent events every 2 s.
"""

import datetime
import json
from html import escape
from urllib.parse import urlencode

from namesrv.status import views

PERM_NAMES = ((4, "R"), (2, "W"), (1, "X"))
STATE_LABELS = {"near-expiry": "near expiry", "expired": "expired, awaiting scan", "removed": "expired, removed"}
#: why a removed member is gone (status/recent.py), as its row says it, with when
GONE_LABELS = {"expired": "expired, removed %s", "connection closed": "connection closed %s"}

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d3557;color:#fff;padding:10px 20px}header h1{font-size:18px;margin:0}
header .sum span{margin-right:18px}main{padding:8px 20px}section{background:#fff;border:1px solid #dde1e7;
border-radius:6px;margin:12px 0;padding:8px 14px}h2{font-size:15px;margin:6px 0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eef0f3;
white-space:nowrap}th{background:#f0f2f5;font-weight:600}td.num{text-align:right}
td.name,td.value{white-space:normal;overflow-wrap:anywhere}td.name{min-width:7em}td.wrap{white-space:normal}
section{overflow-x:auto}
tr.near-expiry td{background:#fff4d6}tr.expired td,tr.removed td{background:#fde2e1;color:#8a1c1c}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;background:#e4f5e9;color:#1b6b35}
tr.near-expiry .badge{background:#ffe29a;color:#6b4e00}tr.expired .badge,tr.removed .badge{background:#f7b4b1;color:#7a1010}
.black{background:#eee;color:#555}form{margin:4px 0}input[type=search]{padding:3px 6px;width:260px}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
#events td:last-child{white-space:normal;word-break:break-word}
tr.no-master td,.peer.dead{background:#fde2e1;color:#8a1c1c}.badge.follower{background:#e8eaf0;color:#334}
.peer{white-space:nowrap;padding:0 4px;border-radius:4px}.badge.dead{background:#f7b4b1;color:#7a1010}
#controller-groups ul{margin:0;padding-left:16px}#controller-groups li.dead{color:#8a1c1c}.pager a{margin:0 4px}.muted{color:#777}.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:0 16px}
"""


def _q(params, **changes):
    merged = {k: v for k, v in params.items() if v}
    merged.update({k: v for k, v in changes.items()})
    return "?" + urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def _pager(params, name, page, pages, total, what):
    if pages <= 1:
        return '<p class="pager muted">%d %s</p>' % (total, what)
    links = []
    if page > 1:
        links.append('<a href="%s">&larr; previous</a>' % escape(_q(params, **{name: page - 1})))
    if page < pages:
        links.append('<a href="%s">next &rarr;</a>' % escape(_q(params, **{name: page + 1})))
    return '<p class="pager muted">%d %s, page %d of %d %s</p>' % (total, what, page, pages, " ".join(links))


def _search(params, name, placeholder, keep=()):
    hidden = "".join('<input type="hidden" name="%s" value="%s">' % (escape(k), escape(params[k]))
                     for k in keep if params.get(k))
    return ('<form method="get">%s<input type="search" name="%s" value="%s" placeholder="%s"> '
            '<button>Search</button></form>' % (hidden, name, escape(params.get(name, "")), escape(placeholder)))


def perm_text(perm):
    if perm is None:
        return ""
    return "%d (%s)" % (perm, "".join(letter for bit, letter in PERM_NAMES if perm & bit) or "-")


def summary(routes, server_id, wall_now):
    stamp = datetime.datetime.fromtimestamp(wall_now, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return ('<div class="sum"><span>%s</span><span>%d clusters</span><span>%d broker groups</span>'
            '<span>%d live brokers</span><span>%d topics</span><span class="muted">%s</span></div>'
            % (escape(server_id), len(routes.cluster_addr_table), len(routes.broker_addr_table),
               len(routes.broker_live_table), len(routes.topic_queue_table), stamp))


def brokers(rows, total, page, pages, params):
    out = ['<h2>Brokers</h2>', _search(params, "bq", "cluster, broker or address", keep=("t", "ns")),
           '<table id="brokers"><tr><th>Cluster</th><th>Broker group</th><th>ID</th><th>Address</th>'
           '<th>HA address</th><th>Version</th><th>Data version</th><th>Topics</th><th>Last heartbeat</th>'
           '<th>Timeout</th><th>State</th></tr>']
    for row in rows:
        out.append('<tr class="%s" data-addr="%s"><td class="name">%s</td><td class="name">%s</td><td class="num">%s'
                   '</td><td>%s</td><td>%s</td><td>%s</td><td class="wrap">%s</td><td class="num">%s</td>'
                   '<td class="num age">%s</td><td class="num">%s</td><td class="wrap"><span class="badge">%s</span>'
                   '</td></tr>' % (
                       row.state, escape(row.addr), escape(row.cluster), escape(row.broker_name), row.broker_id,
                       escape(row.addr), escape(row.ha_addr or ""), escape(row.version), escape(row.data_version),
                       "" if row.topics is None else row.topics, "" if row.age is None else "%.0f s ago" % row.age,
                       "" if row.timeout is None else "%.0f s" % row.timeout, state_label(row)))
    out.append("</table>")
    out.append(_pager(params, "bp", page, pages, total, "brokers"))
    return "".join(out)


def state_label(row):
    """What the State cell says: a removed member says why and when (UTC), as an operator asks."""
    if row.state == "removed" and row.when is not None:
        stamp = datetime.datetime.fromtimestamp(row.when, datetime.timezone.utc).strftime("%H:%M:%S UTC")
        return GONE_LABELS.get(row.why, "removed %s") % stamp
    return STATE_LABELS.get(row.state, row.state)


def topics(params, names, total, page, pages, route_answer):
    out = ['<h2>Topics</h2>', _search(params, "t", "topic name or part of it", keep=("bq", "ns"))]
    query = params.get("t", "")
    if route_answer is not None:
        out.append(route(query, route_answer))
    if query or total:
        out.append('<p>%s</p>' % " &middot; ".join(
            '<a href="%s">%s</a>' % (escape(_q(params, t=name, tp="")), escape(name)) for name in names))
        out.append(_pager(params, "tp", page, pages, total, "topics match" if query else "topics"))
    return "".join(out)


def route(topic, answer):
    """The GET_ROUTEINFO_BY_TOPIC answer, as tables and as the body sent on the wire."""
    data = views.decode_route(answer)
    if data is None:
        return '<div id="route"><p><b>%s</b>: response code %d, <code>%s</code></p></div>' % (
            escape(topic), answer.code, escape(answer.remark or ""))
    out = ['<div id="route"><h2>Route of <code>%s</code> (GET_ROUTEINFO_BY_TOPIC)</h2><div class="cols"><div>'
           % escape(topic), '<table><tr><th>Broker</th><th>Read queues</th><th>Write queues</th><th>Perm</th>'
           '<th>Sys flag</th></tr>']
    for q in data.get("queueDatas") or []:
        out.append('<tr><td>%s</td><td class="num">%s</td><td class="num">%s</td><td>%s</td><td class="num">%s</td>'
                   '</tr>' % (escape(str(q.get("brokerName"))), q.get("readQueueNums"), q.get("writeQueueNums"),
                              perm_text(q.get("perm")), q.get("topicSysFlag")))
    out.append('</table></div><div><table><tr><th>Cluster</th><th>Broker</th><th>Addresses</th></tr>')
    for b in data.get("brokerDatas") or []:
        addrs = b.get("brokerAddrs") or {}
        out.append('<tr><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            escape(str(b.get("cluster"))), escape(str(b.get("brokerName"))),
            escape(", ".join("%s=%s" % (k, addrs[k]) for k in sorted(addrs, key=int)))))
    out.append('</table></div></div><p>Order config: <code>%s</code></p>' % escape(str(data.get("orderTopicConf"))))
    body = answer.body.decode("utf-8", "replace")
    out.append('<details><summary>Answer body (%d bytes, as sent)</summary><pre>%s</pre></details></div>'
               % (len(answer.body), escape(body)))
    return "".join(out)


def kv(params, namespaces, entries):
    out = ['<h2>KV config</h2><table><tr><th>Namespace</th><th>Keys</th></tr>']
    for namespace, count in namespaces:
        out.append('<tr><td><a href="%s">%s</a></td><td class="num">%d</td></tr>' % (
            escape(_q(params, ns=namespace, kq="", kp="")), escape(namespace), count))
    out.append("</table>")
    if entries is not None:
        rows, total, page, pages = entries
        out.append("<h2>%s</h2>" % escape(params["ns"]))
        out.append(_search(params, "kq", "key", keep=("ns", "bq", "t")))
        out.append('<table id="kv"><tr><th>Key</th><th>Value</th></tr>')
        out.extend('<tr><td class="name">%s</td><td class="value">%s</td></tr>' % (escape(k), escape(v))
                   for k, v in rows)
        out.append("</table>" + _pager(params, "kp", page, pages, total, "keys"))
    return "".join(out)


def config(rows):
    out = ['<h2>Effective configuration</h2><p class="muted">Keys marked <span class="badge black">black list'
           '</span> cannot be changed by UPDATE_NAMESRV_CONFIG.</p><table id="config"><tr><th>Key</th><th>Value</th>'
           '<th></th></tr>']
    for name, value, black in rows:
        out.append('<tr><td>%s</td><td class="value">%s</td><td>%s</td></tr>' % (
            escape(name), _breakable(value), '<span class="badge black">black list</span>' if black else ""))
    return "".join(out) + "</table>"


def events(latest):
    out = ['<h2>Recent events</h2><table id="events"><tr><th>Time</th><th>Event</th><th>Details</th></tr>']
    for seq, when, event, fields in latest:
        stamp = datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime("%H:%M:%S")
        details = ", ".join("%s=%s" % (k, _short(fields[k])) for k in sorted(fields))
        out.append('<tr class="ev-%s"><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            escape(event), stamp, escape(event), escape(details)))
    if not latest:
        out.append('<tr><td colspan="3" class="muted">none yet</td></tr>')
    return "".join(out) + "</table>"


def _breakable(value):
    """``value`` escaped, with a line-break opportunity after each ``;`` and ``,`` (a list of keys or addresses
    wraps between its items, not in one)."""
    return escape(value).replace(";", ";<wbr>").replace(",", ",<wbr>")


def _short(value):
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


SCRIPT = """
(function(){
  function refresh(name){
    fetch('/fragment/'+name+location.search,{credentials:'same-origin',cache:'no-store'})
      .then(function(r){return r.ok?r.text():null})
      .then(function(html){if(html!==null){document.getElementById('s-'+name).innerHTML=html;}})
      .catch(function(){});
  }
  setInterval(function(){refresh('brokers');refresh('events');refresh('summary');
    if(document.getElementById('s-controller')){refresh('controller');}}, 2000);
})();
"""


def page(parts):
    """The whole document around the sections ``parts`` (name -> html)."""
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>RocketMQ NameServer status</title>'
            '<style>%s</style></head><body><header><h1>RocketMQ NameServer</h1><div id="s-summary">%s</div>'
            '</header><main><section id="s-brokers">%s</section>%s<section id="s-topics">%s</section>'
            '<section id="s-events">%s</section><section id="s-kv">%s</section><section id="s-config">%s</section>'
            '</main><script src="/static/status.js"></script></body></html>'
            % (STYLE, parts["summary"], parts["brokers"],
               '<section id="s-controller">%s</section>' % parts["controller"] if "controller" in parts else "",
               parts["topics"], parts["events"], parts["kv"], parts["config"]))
