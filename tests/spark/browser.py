"""Open a local HTML page in headless Chromium and report what a reader would see broken.

The page is loaded in an iframe of a small harness page; once everything has loaded (the harness's
``load`` event fires after the iframe's, so after its images), a script lists every image with its
decoded size and every link, and Chromium's ``--dump-dom`` prints the result. No WebDriver, no
network: only ``file://`` URLs, with a fresh profile per run.
"""

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--allow-file-access-from-files", "--virtual-time-budget=10000"]
TIMEOUT_S = 90

HARNESS = """<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>
<iframe id='page' src='%s' width='1280' height='900'></iframe><pre id='result'>pending</pre>
<script>
window.addEventListener('load', function () {
  var out = {title: null, images: [], links: [], ids: []};
  try {
    var doc = document.getElementById('page').contentDocument;
    out.title = doc.title;
    doc.querySelectorAll('img').forEach(function (img) {
      out.images.push({src: img.getAttribute('src'), alt: img.getAttribute('alt'), complete: img.complete,
                       width: img.naturalWidth, height: img.naturalHeight});
    });
    doc.querySelectorAll('a[href]').forEach(function (a) {
      out.links.push({href: a.getAttribute('href'), url: a.href});
    });
    doc.querySelectorAll('[id]').forEach(function (e) { out.ids.push(e.id); });
    var view = doc.documentElement.clientWidth, section = null;
    out.layout = {viewport: view, scroll_width: doc.documentElement.scrollWidth, wide: []};
    doc.querySelectorAll('h2, table').forEach(function (e) {
      if (e.tagName === 'H2') { section = e.id; return; }
      var box = e.getBoundingClientRect();
      if (box.right > view + 0.5) {
        out.layout.wide.push({section: section, right: Math.round(box.right), width: Math.round(box.width)});
      }
    });
    var first = doc.querySelector('h2');
    out.first_heading = first ? first.textContent : null;
    var block = doc.getElementById('what-happened');
    if (block) {
      out.headline = {healthy: block.getAttribute('data-healthy'), text: block.innerText, items: [],
                      paragraphs: block.querySelectorAll('p').length};
      block.querySelectorAll('[data-incident]').forEach(function (li) {
        var entries = [];
        li.querySelectorAll('ol > li').forEach(function (e) { entries.push(e.textContent); });
        var links = [];
        li.querySelectorAll('a[href]').forEach(function (a) { links.push(a.getAttribute('href')); });
        out.headline.items.push({incident: li.getAttribute('data-incident'), count: +li.getAttribute('data-count'),
                                 entries: entries, links: links});
      });
    }
  } catch (e) { out.error = String(e); }
  document.getElementById('result').textContent = JSON.stringify(out);
});
</script></body></html>
"""


def find_chromium():
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def inspect(page_path, chromium=None):
    """{title, images: [{src, alt, complete, width, height}], links: [{href, url}], ids: [...], first_heading,
    headline: {healthy, text, paragraphs, items: [{incident, count, entries, links}]}, layout: {viewport,
    scroll_width, wide: [{section, right, width}]}} of a page shown 1280 px wide (``headline``: the "What
    happened" block, if the page has one; ``wide``: the tables that reach past the window's right edge, with
    the section they are in)."""
    chromium = chromium or find_chromium()
    work = tempfile.mkdtemp(prefix="report-browser-")
    try:
        harness = os.path.join(work, "harness.html")
        with open(harness, "w", encoding="utf-8") as f:
            f.write(HARNESS % html.escape("file://" + urllib.parse.quote(os.path.abspath(page_path)), quote=True))
        cmd = [chromium] + FLAGS + ["--user-data-dir=" + os.path.join(work, "profile"), "--dump-dom",
                                    "file://" + harness]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        found = re.search(r"<pre id=\"result\">(.*?)</pre>", proc.stdout, re.S)
        if proc.returncode != 0 or not found:
            raise RuntimeError("chromium gave no result (exit %s):\n%s" % (proc.returncode, proc.stderr[-3000:]))
        return json.loads(html.unescape(found.group(1)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def broken_links(page_path, result):
    """Links whose target does not exist: a missing file, or a ``#fragment`` the page does not have."""
    broken = []
    for link in result["links"]:
        parsed = urllib.parse.urlparse(link["url"])
        if parsed.scheme != "file":
            broken.append((link["href"], "not a local file"))
            continue
        target = urllib.parse.unquote(parsed.path)
        if os.path.abspath(target) == os.path.abspath(page_path):
            if parsed.fragment and parsed.fragment not in result["ids"]:
                broken.append((link["href"], "no element with this id"))
        elif not os.path.exists(target):
            broken.append((link["href"], "no such file"))
    return broken
