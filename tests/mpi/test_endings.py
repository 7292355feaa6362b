"""How an MPI job ends (cli/main.cpp, rpb::dist::settle_ending): an error every rank meets alike (a bad config, a
refused run folder, a usage error) ends every rank through MPI_Finalize, printed once by rank 0, with the exit status
one process has, and without MPI_Abort (no "MPI_ABORT was invoked" banner); an error one rank meets alone still ends
the job within seconds (MPI_Abort, naming the rank); a clean stop is tested in test_data_parallel.py and
test_sweep.py.

    /usr/bin/python3 tests/mpi/test_endings.py --rpb build/rpb --mpirun /usr/bin/mpirun

ctest runs it when rpb was built with MPI (CMakeLists.txt, test mpi.endings).
"""
import os
import subprocess
import tempfile
import time
import unittest

import mpi_common
from mpi_common import mpi_env, run

CONFIG = """
[run]
name = "ending"
out_dir = "{out_dir}"
steps = 4
batch = 4
length = 16
log_every = 1
eval_multipliers = [1]
eval_tokens = 256

[model]
d_model = 16
heads = 2
layers = 1
d_ff = 32

[position]
scheme = "t5"
num_buckets = 8
max_distance = 32

[task]
kind = "markov"
vocab = 5
order = 1
"""


class Endings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rpb-mpi-endings-")
        cls.config = os.path.join(cls.tmp.name, "ending.toml")
        with open(cls.config, "w") as f:
            f.write(CONFIG.format(out_dir=os.path.join(cls.tmp.name, "runs")))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assert_ends_alike(self, args, message):
        """`rpb args` fails the same way in one process and under mpirun with 2 ranks: there, the message is
        printed once (by rank 0), no rank calls MPI_Abort, and mpirun exits with one process's status."""
        one = run(0, *args)
        self.assertNotEqual(one.returncode, 0, one.stderr)
        self.assertIn(message, one.stderr)
        two = run(2, *args, timeout=120)
        out = two.stdout + two.stderr
        self.assertEqual(two.returncode, one.returncode, out)
        self.assertEqual(out.count(message), 1, out)
        self.assertIn("[rank 0/2] [error]", two.stderr)
        self.assertNotIn("[rank 1/2]", out)
        self.assertNotIn("MPI_ABORT", out)
        self.assertNotIn("You may or may not see output from other processes", out)

    def test_a_bad_config(self):
        self.assert_ends_alike(["train", self.config, "--set", "run.no_such_key=1"], "unknown key run.no_such_key")

    def test_a_usage_error(self):
        self.assert_ends_alike(["train", self.config, "--no-such-option"], "--no-such-option")

    def test_an_existing_run_folder(self):
        # Only rank 0 opens the run folder: its refusal reaches every rank (rpb::dist::on_root).
        r = run(0, "train", self.config, "--set", "run.name=existing")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_ends_alike(["train", self.config, "--set", "run.name=existing"], "already holds checkpoints")

    def test_an_error_of_one_rank_still_ends_the_job(self):
        # mpirun's MPMD form: rank 1 alone has a bad config, while rank 0 waits for it in a collective.
        rpb = [mpi_common.ARGS.rpb, "train", self.config, "--set", "run.name=one_rank"]
        cmd = [mpi_common.ARGS.mpirun, "-np", "1", *rpb, ":", "-np", "1", *rpb, "--set", "run.no_such_key=1"]
        t0 = time.time()
        r = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=90)
        self.assertLess(time.time() - t0, 40)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("[rank 1/2] [error]", r.stderr)
        self.assertEqual(r.stderr.count("unknown key run.no_such_key"), 1, r.stderr)
        # MPI_Abort ended the job: rank 0, waiting in a collective, would otherwise hang until the timeout. Its banner
        # is not checked: Open MPI 4.1 sometimes loses it ("ORTE_ERROR_LOG: Data unpack would read past end of buffer
        # in file ../../../orte/util/show_help.c").


if __name__ == "__main__":
    mpi_common.main(__doc__)
