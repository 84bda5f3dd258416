"""Checks a calibrated cluster file's link: the comment lists the probe's
rounds (ping-pong latency and bandwidth each), and the file's
intra_node latency and bandwidth are the fastest round's."""
import re
import sys

import yaml

text = open(sys.argv[1]).read()
line = re.search(r"^# The link in rounds spread over the measurement "
                 r"\(ping-pong latency, bandwidth\): (.*); each number is its "
                 r"fastest round's\.$", text, re.M)
rounds = [(float(a), float(b)) for a, b in
          re.findall(r"([0-9.]+) us ([0-9.]+) GB/s", line.group(1))]
link = yaml.safe_load(text)["intra_node"]
latency_ok = abs(link["latency_us"] - min(r[0] for r in rounds)) <= 0.006
bandwidth_ok = abs(link["bandwidth_gbs"] - max(r[1] for r in rounds)) <= 0.006
print(f"{len(rounds)} rounds, fastest latency kept: {latency_ok}, "
      f"fastest bandwidth kept: {bandwidth_ok}")
