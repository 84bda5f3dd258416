"""Stops one rank of a running mpirun job and reports how the job ends.

usage: stop_rank.py --rank R --log FILE [--limit S] -- COMMAND...

Runs COMMAND (an mpirun job whose rank 0 writes --log FILE), waits until
the log shows that training runs, then freezes world rank R with SIGSTOP,
as a hung node or a debugger would. The other ranks must notice on their
own (--collective-timeout) and end the whole job. Prints the job's output,
then one line: `OK: the job ended N s after rank R stopped (status X)`
when it ended with a nonzero status within --limit seconds, else `FAIL:`
and why (a hung job is killed and reported, never waited for forever).
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def descendants(root):
    """The pids of every process below `root`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # The name (field 2) may hold spaces: fields after its ')'.
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rank_of(pid):
    """The MPI world rank Open MPI gave process `pid`, or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                    return int(item.split(b"=", 1)[1])
    except OSError:
        pass
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--limit", type=float, default=30)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    output = tempfile.TemporaryFile()
    # In this session: a session of its own would be a scheduling group
    # of its own, whose spinning ranks starve this script on a busy host.
    job = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    stopped, verdict = None, None
    try:
        deadline = time.time() + 60
        while time.time() < deadline and job.poll() is None:
            if os.path.exists(args.log) and os.path.getsize(args.log) > 0:
                # Several processes carry the rank (a wrapper, the program):
                # the program is the deepest, so stop all of them.
                pids = [p for p in descendants(job.pid)
                        if rank_of(p) == args.rank]
                if pids:
                    for pid in pids:
                        os.kill(pid, signal.SIGSTOP)
                    stopped = (time.time(), pids)
                    break
            time.sleep(0.05)
        if stopped is None:
            verdict = "FAIL: rank %d never started training" % args.rank
        else:
            try:
                status = job.wait(timeout=args.limit)
                seconds = time.time() - stopped[0]
                if status == 0:
                    verdict = "FAIL: the job exited 0 with a rank stopped"
                else:
                    verdict = "OK: the job ended %d s after rank %d stopped " \
                              "(status %d)" % (round(seconds), args.rank,
                                               status)
            except subprocess.TimeoutExpired:
                verdict = "FAIL: the job still ran %g s after rank %d " \
                          "stopped (a hang)" % (args.limit, args.rank)
    finally:
        # Never leave processes behind, stopped or not.
        if job.poll() is None:
            for pid in descendants(job.pid) + [job.pid]:
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            job.wait()
        elif stopped:
            for pid in stopped[1]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    output.seek(0)
    sys.stdout.write(output.read().decode(errors="replace"))
    print(verdict)
    return 0 if verdict.startswith("OK") else 1


if __name__ == "__main__":
    sys.exit(main())
