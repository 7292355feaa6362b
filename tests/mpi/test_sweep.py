"""Distributed sweeps (`mpirun -np N build/rpb extrapolate CFG`, train/sweep/work_queue.h): the ranks train whole runs,
each on one rank, handed out as ranks free up; rank 0 evaluates and writes results.{csv,json,svg}, bit-identical
to a one-process sweep's; a second sweep reuses every finished run; evaluation-only methods train nothing; a sweep
stopped with SIGUSR1 saves each rank's run, exits 0 without Open MPI's abort banners and, resumed, gives the
one-process table; every log line names its run's task, method and seed, in one timestamp layout.

    /usr/bin/python3 tests/mpi/test_sweep.py --rpb build/rpb --mpirun /usr/bin/mpirun

ctest runs it when rpb was built with MPI (CMakeLists.txt, test mpi.sweep).
"""
import csv
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import mpi_common
from mpi_common import banners, command, finish, run, start

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICK = os.path.join(SOURCE, "configs", "extrapolation_quick.toml")
# 3 schemes x 2 seeds: 6 runs to train; t5@untrained=nearest evaluates t5's runs.
SETTINGS = ["--set", "run.steps=40", "--set", "optim.warmup_steps=10", "--set", "run.eval_tokens=2048", "--set", "run.log_every=20",
            "--set", 'sweep.methods=["t5", "alibi", "t5@untrained=nearest", "rope"]', "--set", "sweep.seeds=[0, 1]"]


def sweep(ranks, out_dir, *more):
    return run(ranks, "extrapolate", QUICK, *SETTINGS, "--set", "run.out_dir=" + out_dir, *more)


# results.csv's provenance columns (train/sweep/results.h): the run folders, checkpoint digests (a checkpoint holds
# its creation time), command and date differ between two sweeps by design.
PROVENANCE_COLUMNS = {"run_folder", "config_digest", "checkpoint", "checkpoint_sha256", "rpb_version", "commit",
                      "command", "date"}


def results(out_dir):
    """results.json's rows and results.csv's cells, without their provenance (rows' "runs", the CSV's columns)."""
    folder = os.path.join(out_dir, "extrapolation_quick")
    with open(os.path.join(folder, "results.json")) as f:
        rows = [{k: v for k, v in row.items() if k != "runs"} for row in json.load(f)["rows"]]
    with open(os.path.join(folder, "results.csv"), newline="") as f:
        table = list(csv.reader(f))
    keep = [i for i, name in enumerate(table[0]) if name not in PROVENANCE_COLUMNS]
    return rows, [[line[i] for i in keep] for line in table]


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


# rpb's one timestamp layout (train/run/log_format.h), and what names a sweep run in its log lines.
STAMP = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] "
NAMED = r"\] markov / (t5|alibi|rope|t5@untrained=nearest) / seed [01]: "


class SweepLog(unittest.TestCase):
    def assert_named_and_stamped(self, text):
        lines = text.splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, STAMP)
            self.assertRegex(line, NAMED)

    def test_every_log_line_names_its_run_in_one_timestamp_layout(self):
        with tempfile.TemporaryDirectory(prefix="rpb-mpi-log-") as tmp:
            for ranks in [0, 2]:
                with self.subTest(ranks=ranks):
                    out_dir = os.path.join(tmp, str(ranks))
                    r = sweep(ranks, out_dir, "--set", 'sweep.methods=["t5", "t5@untrained=nearest"]',
                              "--set", "sweep.seeds=[1]")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assert_named_and_stamped(r.stderr)
                    self.assert_named_and_stamped(read_logs(out_dir))


class StoppedSweep(unittest.TestCase):
    def test_sigusr1_saves_every_rank_s_run_and_the_resumed_table_is_the_one_process_table(self):
        longer = ["--set", "run.steps=160", "--set", 'sweep.methods=["t5", "alibi"]']  # 4 runs
        with tempfile.TemporaryDirectory(prefix="rpb-mpi-stop-") as tmp:
            stopped, whole = os.path.join(tmp, "stopped"), os.path.join(tmp, "whole")
            job = start(command(2, "extrapolate", QUICK, *SETTINGS, "--set", "run.out_dir=" + stopped, *longer),
                        stderr=subprocess.STDOUT)
            deadline = time.time() + 60
            while time.time() < deadline and job.poll() is None and "step 60/160" not in read_logs(stopped):
                time.sleep(0.05)
            job.send_signal(signal.SIGUSR1)  # mpirun forwards it to both ranks, each mid-run
            out, _ = finish(job, 60)
            self.assertEqual(job.returncode, 0, out)  # a clean stop of every rank (138 would make mpirun abort)
            self.assertEqual(banners(out), [], out)
            self.assertIn("resume with: mpirun -np 2 " + mpi_common.ARGS.rpb + " extrapolate", out)  # argv[0] as run
            resumed = sweep(2, stopped, *longer)
            self.assertEqual(resumed.returncode, 0, resumed.stderr)
            # The stopped runs went on from their saved steps ("steps 64..160" in their train.log).
            self.assertGreaterEqual(len(re.findall(r"steps [1-9][0-9]*\.\.160", read_logs(stopped))), 2)
            one = sweep(0, whole, *longer)
            self.assertEqual(one.returncode, 0, one.stderr)
            self.assertEqual(results(stopped), results(whole))


def read_logs(out_dir):
    """Every train.log under out_dir, concatenated."""
    text = ""
    for folder, _, files in os.walk(out_dir):
        if "train.log" in files:
            with open(os.path.join(folder, "train.log")) as f:
                text += f.read()
    return text


if __name__ == "__main__":
    mpi_common.main(__doc__)
