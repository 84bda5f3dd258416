"""Writes a float32 .npy file whose header declares SHAPE verbatim (a
corrupt or hostile header), followed by 96 bytes of zeros.

usage: write_bad_npy.py PATH SHAPE   e.g. write_bad_npy.py x.npy '(a6, 3)'
"""
import sys

path, shape = sys.argv[1], sys.argv[2]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * (127 - 10 - len(header)) + "\n"
with open(path, "wb") as out:
    out.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little"))
    out.write(header.encode() + bytes(96))
