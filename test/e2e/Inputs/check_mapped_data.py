"""Reads --print-memory-peak's lines of a run on --data files of 80 MB and
counts the ranks whose own memory (the rise less its file-backed pages)
stayed under 8 MiB and whose file-backed pages hold at least the files'
data (mapped and read, not copied).

usage: check_mapped_data.py OUTPUT RANKS
"""
import re
import sys

DATA = (4 << 20) * (3 * 4 + 8)

text = open(sys.argv[1]).read()
ranks = [(int(p), int(f)) for p, f in re.findall(
    r"rank \d+: peak (\d+) bytes, of which file-backed (\d+);", text)]
if len(ranks) != int(sys.argv[2]):
    sys.exit(f"expected {sys.argv[2]} ranks' lines:\n{text}")
for peak, file in ranks:
    print(f"own {peak - file} bytes, file-backed {file}")
print(f"ranks: {len(ranks)}, own memory under 8 MiB: "
      f"{sum(peak - file < 8 << 20 for peak, file in ranks)}, file-backed "
      f"at least the data: {sum(file >= DATA for peak, file in ranks)}")
