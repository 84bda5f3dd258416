"""Summarizes how a generated training program runs its step in parts
(codegen/EmitParts.cpp): its part functions, and per stage the calls of its
table and how often each function is called.

usage: part_calls.py PROGRAM.cpp [PROGRAM.cpp ...]
Prints, for each program, the number of part functions and, per stage,
the number of calls and of calls of its most-called function.
"""
import re
import sys
from collections import Counter


def summarize(path):
    text = open(path).read()
    functions = re.findall(r"^static void (stepPart\w*)\(", text, re.M)
    print(f"{len(functions)} part functions")
    tables = re.findall(
        r"^static const PartCall (k\w+Parts)\[\] = \{\n(.*?)^\};", text,
        re.M | re.S)
    for name, body in tables:
        calls = re.findall(r"^\s*\{(stepPart\w*),", body, re.M)
        most = Counter(calls).most_common(1)[0][1] if calls else 0
        print(f"{name}: {len(calls)} calls, the most-called function "
              f"{most} times")


for path in sys.argv[1:]:
    summarize(path)
