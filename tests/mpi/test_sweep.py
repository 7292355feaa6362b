"""Distributed sweeps (`mpirun -np N build/rpb extrapolate CFG`, cli/work_queue.h): the ranks train whole runs,
each on one rank, handed out as ranks free up; rank 0 evaluates and writes results.{csv,json,svg}, bit-identical
to a one-process sweep's; a second sweep reuses every finished run; evaluation-only methods train nothing.

    /usr/bin/python3 tests/mpi/test_sweep.py --rpb build/rpb --mpirun /usr/bin/mpirun

ctest runs it when rpb was built with MPI (CMakeLists.txt, test mpi.sweep).
"""
import json
import os
import re
import tempfile
import unittest

import mpi_common
from mpi_common import run

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICK = os.path.join(SOURCE, "configs", "extrapolation_quick.toml")
# 3 schemes x 2 seeds: 6 runs to train; t5@untrained=nearest evaluates t5's runs.
SETTINGS = ["--set", "run.steps=40", "--set", "optim.warmup_steps=10", "--set", "run.eval_tokens=2048", "--set", "run.log_every=20",
            "--set", 'sweep.methods=["t5", "alibi", "t5@untrained=nearest", "rope"]', "--set", "sweep.seeds=[0, 1]"]


def sweep(ranks, out_dir):
    return run(ranks, "extrapolate", QUICK, *SETTINGS, "--set", "run.out_dir=" + out_dir)


def results(out_dir):
    folder = os.path.join(out_dir, "extrapolation_quick")
    with open(os.path.join(folder, "results.json")) as f:
        rows = json.load(f)["rows"]
    with open(os.path.join(folder, "results.csv")) as f:
        table = f.read()
    return rows, table


class DistributedSweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rpb-mpi-sweep-")
        cls.one = os.path.join(cls.tmp.name, "one")
        cls.two = os.path.join(cls.tmp.name, "two")
        cls.first = sweep(0, cls.one)
        cls.second = sweep(2, cls.two)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_table_is_the_one_process_table(self):
        self.assertEqual(self.first.returncode, 0, self.first.stderr)
        self.assertEqual(self.second.returncode, 0, self.second.stderr)
        self.assertEqual(results(self.one), results(self.two))
        self.assertIn("| T5 bias, untrained nearest |", self.second.stdout)
        self.assertTrue(os.path.exists(os.path.join(self.two, "extrapolation_quick", "results.svg")))

    def test_both_ranks_train_and_each_run_once(self):
        trained = re.findall(r"\[rank (\d): run (\d)/6\] markov / (\S+) / seed (\d): training", self.second.stderr)
        self.assertEqual(len(trained), 6, self.second.stderr)
        self.assertEqual({r for r, _, _, _ in trained}, {"0", "1"})  # both ranks took runs
        self.assertEqual(sorted((m, s) for _, _, m, s in trained),
                         sorted((m, s) for m in ["t5", "alibi", "rope"] for s in "01"))
        # Only rank 0 writes the table.
        self.assertEqual(self.second.stdout.count("| Method |"), 1)

    def test_a_second_sweep_reuses_every_run(self):
        again = sweep(2, self.two)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertNotIn(": training in", again.stderr)
        self.assertEqual(again.stderr.count("finished earlier, reusing"), 6 + 8)  # the ranks' pass, then rank 0's
        self.assertEqual(results(self.two), results(self.one))


if __name__ == "__main__":
    mpi_common.main(__doc__)
