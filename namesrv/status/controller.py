"""The status page's Controller section (when ``enableControllerInNamesrv``): who leads, and each
broker group's master, epochs, in-sync set and members, from ``Controller.status()``.

What an operator looks for first is a group with no live master, so those groups come first and
are marked; then the rest by name. A member of the controller group this one has no link with is
marked the same red, with a count beside the peers. One page holds 50 groups (``cq`` searches cluster, group and
addresses, ``cp`` pages), as every other list of the page. The section refreshes every 2 s with
the brokers.
"""

from html import escape

from namesrv.status.html import _pager, _search
from namesrv.status.views import page_of


def _text(value):
    return "" if value is None else escape(str(value))


def _matches(group, query):
    words = [group.get("cluster"), group.get("brokerName")] + [m.get("address") for m in group.get("members") or ()]
    return any(query in str(word).lower() for word in words if word is not None)


def groups_page(status, query="", page=1):
    """(groups of one page, how many match, page, pages): masterless groups first, then by name."""
    query = (query or "").strip().lower()
    groups = [g for g in status.get("groups") or () if not query or _matches(g, query)]
    groups.sort(key=lambda g: (bool(g.get("masterAlive")), g.get("cluster") or "", g.get("brokerName") or ""))
    # page_of pages names; pages of groups are the same arithmetic on their positions
    positions, total, page, pages = page_of(list(range(len(groups))), "", page, already_sorted=True)
    return [groups[i] for i in positions], total, page, pages


def _peer(peer_id, address, state):
    label = {"self": "this one", "connected": "connected", "dead": "not connected"}[state]
    return '<span class="peer %s" data-peer="%s">%s=%s (%s)</span>' % (
        state, escape(str(peer_id)), escape(str(peer_id)), escape(str(address)), label)


def _peers_line(status):
    """Every member of the group: this one, those it has a link with, and, red as a group without a master,
    those it has none with (a member down, cut off, or refusing this one's secret)."""
    controller = status.get("controller") or {}
    peers = controller.get("peers") or {}
    connected = set(controller.get("connectedPeers") or ())
    states = {peer_id: "self" if peer_id == status.get("selfId") else "connected" if peer_id in connected else "dead"
              for peer_id in peers}
    dead = sum(1 for state in states.values() if state == "dead")
    shown = ", ".join(_peer(peer_id, address, states[peer_id]) for peer_id, address in sorted(peers.items()))
    warning = (' &middot; <span class="badge dead">%d of %d peers not connected</span>' % (dead, len(peers) - 1)
               if dead else "")
    return '<p id="controller-peers">Peers: %s%s</p>' % (shown or "none", warning)


def _leader_line(status):
    controller = status.get("controller") or {}
    peers = controller.get("peers") or {}
    leader = controller.get("leaderId")
    elections = status.get("elections") or {}
    return ('<p id="controller-role">Group <b>%s</b> &middot; this controller <b>%s</b> is <span class="badge %s">%s'
            '</span> &middot; leader <b>%s</b>%s &middot; term %s &middot; %s events applied (%s)</p>'
            '%s<p class="muted">%s live brokers &middot; elections: %s new master, %s kept the '
            'master, %s without a master</p>'
            % (_text(status.get("group")), _text(status.get("selfId")),
               "leader" if status.get("isLeader") else "follower", _text(controller.get("role")),
               _text(leader) if leader is not None else "none",
               " (%s)" % escape(str(peers[leader])) if leader in peers else "", _text(controller.get("term")),
               _text(controller.get("applied")), _text(controller.get("mode")), _peers_line(status),
               _text(status.get("liveBrokers")), elections.get("new_master_elected", 0),
               elections.get("keep_current_master", 0), elections.get("no_master_elected", 0)))


def _members_line(status):
    """Raft's members (several controllers only): authenticated or not, the lease, and refusals."""
    controller = status.get("controller") or {}
    if controller.get("mode") != "raft":
        return ""
    if controller.get("authenticated"):
        auth = "members authenticated by the group's secret and their own keys"
    else:
        auth = '<span class="badge dead">member authentication disabled</span> (controllerPeerAuthDisabled)'
    parts = [auth]
    if controller.get("leaseSeconds") is not None:
        parts.append("lease %.2f s" % controller["leaseSeconds"])
    refused = controller.get("refusedLinks") or 0
    if refused:
        parts.append("%d member connections refused (see the log)" % refused)
    dropped = {k: v for k, v in (controller.get("dropped") or {}).items() if v}
    if dropped:
        parts.append("held back: " + ", ".join("%s %s" % (v, k.replace("_", " ")) for k, v in sorted(dropped.items())))
    return '<p id="controller-members" class="muted">%s</p>' % " &middot; ".join(parts)


def _members_table(status):
    """The group's configuration in force: each member's role, lag behind the leader and last contact."""
    controller = status.get("controller") or {}
    members = controller.get("members") or []
    if controller.get("mode") != "raft":
        return ""
    configuration = controller.get("configuration") or {}
    notes = []
    if configuration.get("epoch"):
        notes.append("group epoch %s (forced anew)" % _text(configuration["epoch"]))
    if configuration.get("fenced"):
        notes.append("fenced: %s" % escape(", ".join(configuration["fenced"])))
    if controller.get("fencedReason"):
        notes.append('<span class="badge dead">this controller is fenced</span> %s' % _text(controller["fencedReason"]))
    transfer = controller.get("transfer")
    if transfer:
        notes.append("handing leadership over to %s (%s)" % (_text(transfer.get("target")), _text(transfer.get("phase"))))
    store = controller.get("store") or {}
    if store:
        notes.append("store: journal %s B, snapshot %s B of %s B" % (_text(store.get("journalBytes")),
                                                                    _text(store.get("snapshotBytes")),
                                                                    _text(store.get("maxBytes"))))
    rows = ['<tr class="%s"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="num">%s</td><td class="num">%s</td>'
            '<td>%s</td></tr>' % ("alive" if m.get("connected") else "dead", _text(m.get("id")), _text(m.get("address")),
                                  _text(m.get("role")), "leader" if m.get("leader") else "",
                                  "" if m.get("lag") is None else _text(m["lag"]),
                                  "" if m.get("lastContactSeconds") is None else "%.2f s" % m["lastContactSeconds"],
                                  "this one" if m.get("self") else ("linked" if m.get("connected") else "not linked"))
            for m in members]
    return ('<p class="muted">%s</p><table id="controller-members-table"><tr><th>Member</th><th>Address</th>'
            '<th>Role</th><th>Leads</th><th>Lag (entries)</th><th>Last contact</th><th>Link</th></tr>%s</table>'
            % (" &middot; ".join(notes), "".join(rows)))


def _master_text(group):
    if group.get("masterBrokerId") is None:
        text = "none"
    else:
        text = "%s (%s)%s" % (group["masterBrokerId"], _text(group.get("masterAddress")),
                              "" if group.get("masterAlive") else " dead")
    if group.get("masterlessSeconds") is not None:
        text += ", without a live master for %.0f s" % group["masterlessSeconds"]
    return text


def _member(member, master_id):
    states = ["master" if member.get("brokerId") == master_id else "replica",
              "in sync" if member.get("inSync") else "not in sync", "alive" if member.get("alive") else "dead"]
    # a beat without them says -1 (Java's default): not worth a column of "-1"
    if member.get("epoch") is not None and member["epoch"] >= 0:
        states.append("epoch %s" % member["epoch"])
    if member.get("maxOffset") is not None and member["maxOffset"] >= 0:
        states.append("offset %s" % member["maxOffset"])
    return '<li class="%s">%s %s: %s</li>' % ("alive" if member.get("alive") else "dead", _text(member.get("brokerId")),
                                               _text(member.get("address")), ", ".join(states))


def section(status, params, page=1):
    """The whole section for one ``Controller.status()``, its ``page``-th page of groups."""
    groups, total, page, pages = groups_page(status, params.get("cq", ""), page)
    out = ['<h2>Controller</h2>', _leader_line(status), _members_line(status), _members_table(status),
           _search(params, "cq", "cluster, broker group or address", keep=("bq", "t", "ns")),
           '<table id="controller-groups"><tr><th>Cluster</th><th>Broker group</th><th>Master</th>'
           '<th>Master epoch</th><th>In-sync set</th><th>Sync set epoch</th><th>Members</th></tr>']
    for group in groups:
        out.append('<tr class="%s" data-group="%s"><td>%s</td><td>%s</td><td>%s</td><td class="num">%s</td>'
                   '<td>%s</td><td class="num">%s</td><td><ul>%s</ul></td></tr>' % (
                       "has-master" if group.get("masterAlive") else "no-master", escape(str(group.get("brokerName"))),
                       _text(group.get("cluster")), _text(group.get("brokerName")), _master_text(group),
                       _text(group.get("masterEpoch")),
                       escape("{%s}" % ", ".join(str(b) for b in group.get("syncStateSet") or ())),
                       _text(group.get("syncStateSetEpoch")),
                       "".join(_member(m, group.get("masterBrokerId")) for m in group.get("members") or ())))
    if not groups:
        out.append('<tr><td colspan="7" class="muted">no broker group</td></tr>')
    out.append("</table>")
    out.append(_pager(params, "cp", page, pages, total, "broker groups"))
    return "".join(out)

