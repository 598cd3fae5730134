#!/usr/bin/env python3
"""Runs a command as one MPI rank, with busy processes beside it on that rank's cores when the
rank is RANK: a neighbour outside tpbench that takes the rank's CPU, as another tenant's job
would. The neighbours inherit the rank's binding (mpirun --bind-to core), one per CPU of it,
die with the rank (PR_SET_PDEATHSIG), and their PIDs are appended to PIDFILE so that the test
can make sure of it.

  mpirun -np 2 --bind-to core busy_neighbour.py RANK PIDFILE tpbench run ...
"""
import ctypes
import os
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, 9)


def main():
    rank, pidfile, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    me = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "-1")))
    if me == rank:
        with open(pidfile, "a") as f:
            for _ in os.sched_getaffinity(0):
                p = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                     preexec_fn=die_with_parent)
                f.write(f"{p.pid}\n")
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
