"""What the MPI tests share: running build/rpb under mpirun on this machine (oversubscribed, as root where CI
runs as root) or as one plain process, and their command line (--rpb, --mpirun)."""
import argparse
import os
import signal
import subprocess
import sys
import unittest

ARGS = None


def mpi_env():
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_rmaps_base_oversubscribe": "1",
                # Containers often forbid the cross-process reads (CMA) of Open MPI's shared-memory transport,
                # which then fails its large messages: copy through the shared segment instead.
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
                # A rank waiting in a collective (a rank done, waiting for the others' ending) yields its core
                # instead of busy-polling it, which Open MPI does unless it knows the node is oversubscribed.
                "OMPI_MCA_mpi_yield_when_idle": "1"})
    env.pop("RPB_NUM_THREADS", None)  # the ranks pick their threads
    return env


def command(ranks, *args):
    """rpb with `args` under mpirun with `ranks` ranks; ranks = 0: the plain one-process command."""
    base = [ARGS.rpb, *args]
    return base if ranks == 0 else [ARGS.mpirun, "-np", str(ranks), *base]


LIVE = set()  # the sessions of the jobs start() started and finish() has not reaped


def start(cmd, env=None, stderr=subprocess.PIPE):
    """`cmd` in the background, in a session of its own (see finish)."""
    job = subprocess.Popen(cmd, env=env or mpi_env(), stdout=subprocess.PIPE, stderr=stderr, text=True,
                           start_new_session=True)
    LIVE.add(job.pid)
    return job


def kill_session(sid):
    """SIGKILL to every process of session `sid`: mpirun and its ranks (each in a process group of its own)."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # state, ppid, pgrp, session, ...
            if int(fields[3]) == sid:
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def finish(job, timeout):
    """(stdout, stderr) of a job from start() once it ended; past `timeout` seconds its whole session is killed
    (not only mpirun) and TimeoutExpired raised."""
    try:
        return job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(job.pid)
        job.communicate()
        raise
    finally:
        LIVE.discard(job.pid)


def end_live_jobs(sig, _frame):
    """SIGTERM or SIGINT to the test (ctest, Ctrl-C): its jobs, in sessions of their own, end with it."""
    for sid in list(LIVE):
        kill_session(sid)
    raise SystemExit(128 + sig)


def run_command(cmd, timeout, env=None):
    job = start(cmd, env)
    out, err = finish(job, timeout)
    return subprocess.CompletedProcess(cmd, job.returncode, out, err)


# The default timeout of a command that trains: the longest (a sweep of 4 runs of 160 steps, or 200 steps under 4
# ranks) takes about 15 s alone on 2 cores, but took over 180 s on a 2-core machine loaded 5 times over.
TRAIN_TIMEOUT = 300


def run(ranks, *args, timeout=TRAIN_TIMEOUT, env=None):
    return run_command(command(ranks, *args), timeout, env)


# What Open MPI prints when a job ends abnormally: MPI_Abort's banner, and mpirun's notices of ranks that exited
# with a non-zero status (any non-zero status, even after MPI_Finalize: Open MPI 4.1 then aborts the job).
BANNERS = ["MPI_ABORT", "job has been aborted", "exited with non-zero status", "exiting improperly"]


def banners(text):
    """The abort banners of Open MPI in `text`."""
    return [b for b in BANNERS if b in text]


def main(doc):
    global ARGS
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rpb", required=True)
    parser.add_argument("--mpirun", required=True)
    ARGS, rest = parser.parse_known_args()
    signal.signal(signal.SIGTERM, end_live_jobs)
    signal.signal(signal.SIGINT, end_live_jobs)
    unittest.main(module="__main__", argv=[sys.argv[0], *rest], verbosity=2)
