"""Opens a page in headless Chromium as a reader's browser would and
reports what it saw: every console message (the report has no script, so
any message is a problem: a blocked external load, a parse error), the DOM
after loading (DIR/dom.html, for check_report.py) and a screenshot
(DIR/page.png) with how much of it the charts' colors cover.

usage: open_in_chromium.py PAGE.html DIR
"""

import os
import subprocess
import sys

from PIL import Image


def chromium(page, out, *flags):
    # A profile of its own: tests may run side by side.
    profile = os.path.join(out, "profile")
    return subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--user-data-dir=" + profile, *flags,
         "file://" + os.path.abspath(page)],
        capture_output=True, text=True, timeout=120)


def main():
    page, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    loaded = chromium(page, out, "--enable-logging=stderr", "--v=0", "--dump-dom")
    if loaded.returncode != 0 or not loaded.stdout:
        sys.exit("chromium failed (%d): %s" % (loaded.returncode, loaded.stderr[-2000:]))
    messages = [line.split("] ", 1)[-1] for line in loaded.stderr.splitlines()
                if ":CONSOLE" in line]
    print("console messages: %d" % len(messages))
    for message in messages:
        print("  " + message)
    with open(os.path.join(out, "dom.html"), "w", encoding="utf-8") as f:
        f.write(loaded.stdout)

    shot = os.path.join(out, "page.png")
    taken = chromium(page, out, "--hide-scrollbars", "--window-size=1100,2600",
                     "--screenshot=" + shot)
    if taken.returncode != 0 or not os.path.exists(shot):
        sys.exit("chromium took no screenshot: %s" % taken.stderr[-2000:])
    image = Image.open(shot).convert("RGB")
    colors = image.getcolors(maxcolors=1 << 20)
    count = {rgb: n for n, rgb in colors}
    # The memory bars' parameters, the schedule's forward and backward.
    covered = {name: count.get(rgb, 0) for name, rgb in
               [("parameters", (0x4e, 0x79, 0xa7)), ("activations", (0xe1, 0x57, 0x59)),
                ("backward", (0xf2, 0x8e, 0x2b))]}
    print("screenshot: %dx%d, %s" % (image.width, image.height, ", ".join(
        "%s drawn: %s" % (name, n > 200) for name, n in covered.items())))


if __name__ == "__main__":
    main()
