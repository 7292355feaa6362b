"""What the MPI tests share: running build/rpb under mpirun on this machine (oversubscribed, as root where CI
runs as root) or as one plain process, and their command line (--rpb, --mpirun)."""
import argparse
import os
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
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
    env.pop("RPB_NUM_THREADS", None)  # the ranks pick their threads
    return env


def command(ranks, *args):
    """rpb with `args` under mpirun with `ranks` ranks; ranks = 0: the plain one-process command."""
    base = [ARGS.rpb, *args]
    return base if ranks == 0 else [ARGS.mpirun, "-np", str(ranks), *base]


def run(ranks, *args, timeout=300):
    return subprocess.run(command(ranks, *args), env=mpi_env(), capture_output=True, text=True, timeout=timeout)


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
    unittest.main(module="__main__", argv=[sys.argv[0], *rest], verbosity=2)
