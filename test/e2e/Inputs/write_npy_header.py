"""Writes a .npy file with the header text HEADER verbatim (a corrupt or
hostile header), followed by 96 bytes of zeros. --length overrides the
header length the preamble declares, --version the format version (1: a
2-byte length, 2: a 4-byte one).

usage: write_npy_header.py PATH HEADER [--version V] [--length N]
  e.g. write_npy_header.py x.npy "{'descr': '<f4', 'descr': '<f8', ...}"
"""
import argparse

p = argparse.ArgumentParser()
p.add_argument("path")
p.add_argument("header")
p.add_argument("--version", type=int, default=1)
p.add_argument("--length", type=int)
a = p.parse_args()
header = a.header.encode()
header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
length = len(header) if a.length is None else a.length
size = 2 if a.version == 1 else 4
with open(a.path, "wb") as out:
    out.write(b"\x93NUMPY" + bytes([a.version, 0]) + length.to_bytes(size, "little"))
    out.write(header + bytes(96))
