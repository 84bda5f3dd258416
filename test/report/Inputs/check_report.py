"""Reads a report page (the HTML file cleave report wrote, or the DOM
headless Chromium dumped after loading it) and prints what a reader would
see in it: the charts' elements and counts, and anything that would make
the page less than self-contained.

usage: check_report.py PAGE.html
"""

import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.classes = {}
        self.data = {}
        self.scripts = 0
        self.external = []
        self.sections = []
        self.in_h2 = False
        self.text = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for cls in (attrs.get("class") or "").split():
            self.classes.setdefault(cls, []).append(attrs)
        if tag == "script":
            self.scripts += 1
        if tag in ("link", "iframe", "object", "embed"):
            self.external.append(tag)
        for name in ("src", "href", "xlink:href"):
            value = attrs.get(name) or ""
            if value and not value.startswith(("#", "data:")):
                self.external.append(value)
        if tag == "h2":
            self.in_h2 = True

    def handle_endtag(self, tag):
        if tag == "h2":
            self.in_h2 = False

    def handle_data(self, data):
        if self.in_h2:
            self.sections.append(data.strip())
        self.text.append(data)


def main():
    page = Page()
    page.feed(open(sys.argv[1], encoding="utf-8").read())
    c = page.classes
    print("sections:", ", ".join(page.sections))
    bars = c.get("memory-bar", [])
    print("memory bars: %d, ranks %s" % (len(bars), ",".join(b["data-rank"] for b in bars)))
    print("measured memory bars: %d" % len(c.get("memory-bar-measured", [])))
    for kind in ("gantt-row", "gantt-row-measured"):
        rows = c.get(kind, [])
        print("%s: %d, stages %s, every row has slices: %s" % (
            kind, len(rows), ",".join(r["data-stage"] for r in rows),
            all(int(r["data-slices"]) > 0 for r in rows)))
    lines = c.get("loss-line", [])
    print("loss lines: %d, points %s" % (len(lines), ",".join(l["data-points"] for l in lines)))
    print("plans: %d, chosen: %d" % (len(c.get("plan", [])), len(c.get("chosen", []))))
    print("mesh cells: %d" % len(c.get("rank", [])))
    print("scripts: %d, external references: %s" % (page.scripts, page.external or "none"))


if __name__ == "__main__":
    main()
