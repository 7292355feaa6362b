"""Data-parallel training under MPI (train/dist/distributed.h, Run with Parallel::ranks), run through mpirun with up to
4 ranks on this machine (oversubscribed):

- 2 and 4 ranks follow the one-process loss curve for 200 steps within 1e-5 relative at every step, and two runs
  with the same rank count end with bit-identical checkpoints;
- a checkpoint written by 2 ranks resumes under 2 ranks bit-identically and under 4 ranks as 4 ranks would run;
- kill -9 of one rank ends the job non-zero naming the rank, leaves `latest` and its checkpoint intact, and a
  resumed run ends bit-identical to an uninterrupted one;
- SIGUSR1 to mpirun stops every rank after the same step, rank 0 saves it, the job exits 0 without Open MPI's abort
  banners, and the run resumes bit-identically;
- an error seen by every rank (a bad batch, a config that differs between ranks) ends every rank through
  MPI_Finalize (printed once, no MPI_Abort), and one seen by one rank alone (a bad key) ends every rank within
  seconds;
- each rank runs cores / ranks-on-the-node threads by default.

    /usr/bin/python3 tests/mpi/test_data_parallel.py --rpb build/rpb --mpirun /usr/bin/mpirun

ctest runs it when rpb was built with MPI (CMakeLists.txt, test mpi.data_parallel). Running as root (as CI does),
it sets OMPI_ALLOW_RUN_AS_ROOT for mpirun.
"""
import argparse
import csv
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import mpi_common
from mpi_common import banners, command, finish, run, run_command, start

TOLERANCE = 1e-5

CONFIG = """
[run]
name = "dp"
out_dir = "{out_dir}"
seed = 3
steps = {steps}
batch = 8
length = 32
log_every = 1
checkpoint_every = {every}
eval_multipliers = [1, 2]
eval_tokens = 1024

[model]
d_model = 32
heads = 4
layers = 2
d_ff = 64

[position]
scheme = "t5"
num_buckets = 16
max_distance = 64

[task]
kind = "markov"
vocab = 16
order = 2

[optim]
lr = 3e-3
schedule = "cosine"
warmup_steps = 10
grad_clip = 1.0
"""


def losses(folder):
    with open(os.path.join(folder, "metrics.csv"), newline="") as f:
        return [(int(r["step"]), float(r["train_loss"])) for r in csv.DictReader(f)]


def datasets(path):
    import h5py  # python3-h5py (scripts/deps.sh)
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("metrics/"):  # timings differ run to run
                out[name] = obj[()].tobytes()
        f.visititems(visit)
    return out


class DataParallel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rpb-mpi-")
        cls.root = cls.tmp.name
        cls.config = cls.write_config("dp.toml", steps=200, every=50)
        cls.folders = {}
        for name, ranks in [("np1", 0), ("np2", 2), ("np4", 4), ("np2_again", 2)]:
            r = run(ranks, "train", cls.config, "--set", "run.name=" + name)
            if r.returncode != 0:
                raise AssertionError(f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            cls.folders[name] = os.path.join(cls.root, "runs", name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def write_config(cls, name, steps, every):
        path = os.path.join(cls.root, name)
        with open(path, "w") as f:
            f.write(CONFIG.format(out_dir=os.path.join(cls.root, "runs"), steps=steps, every=every))
        return path

    def assert_close_curves(self, a, b, first_step=1):
        a = [x for x in a if x[0] >= first_step]
        b = [x for x in b if x[0] >= first_step]
        self.assertEqual([s for s, _ in a], [s for s, _ in b])
        for (step, x), (_, y) in zip(a, b):
            self.assertLessEqual(abs(x - y) / abs(x), TOLERANCE, f"step {step}: {x} against {y}")

    def test_ranks_follow_the_one_process_curve(self):
        one = losses(self.folders["np1"])
        self.assertEqual(len(one), 200)
        for name in ["np2", "np4"]:
            with self.subTest(ranks=name):
                self.assert_close_curves(one, losses(self.folders[name]))
        # Not the same bits: the shards' sums are added in another order (else this test would prove nothing).
        self.assertNotEqual(one, losses(self.folders["np2"]))

    def test_same_rank_count_is_bit_identical(self):
        self.assertEqual(losses(self.folders["np2"]), losses(self.folders["np2_again"]))
        final = "step_00000200.h5"
        self.assertEqual(datasets(os.path.join(self.folders["np2"], final)),
                         datasets(os.path.join(self.folders["np2_again"], final)))

    def test_only_rank_0_writes(self):
        with open(os.path.join(self.folders["np2"], "train.log")) as f:
            log = f.read()
        self.assertIn("data-parallel over 2 ranks", log)
        self.assertIn("4 rows each", log)
        self.assertEqual(log.count("finished at step 200"), 1)

    def test_threads_per_rank(self):
        with open(os.path.join(self.folders["np2"], "train.log")) as f:
            log = f.read()
        threads = max(1, (os.cpu_count() or 1) // 2)  # 2 ranks on this node
        self.assertIn(f"{threads} thread{'' if threads == 1 else 's'} per rank", log)

    def test_resume_under_another_rank_count(self):
        for name, ranks, reference in [("from2to2", 2, "np2"), ("from2to4", 4, "np4")]:
            with self.subTest(name=name):
                folder = os.path.join(self.root, "runs", name)
                shutil.copytree(self.folders["np2"], folder)
                r = run(ranks, "train", self.config, "--set", "run.name=" + name,
                        "--resume-from", os.path.join(folder, "step_00000100.h5"))
                self.assertEqual(r.returncode, 0, r.stderr)
                if ranks == 2:  # the same rank count: the same bits as the uninterrupted run
                    self.assertEqual(losses(folder), losses(self.folders["np2"]))
                    self.assertEqual(datasets(os.path.join(folder, "step_00000200.h5")),
                                     datasets(os.path.join(self.folders["np2"], "step_00000200.h5")))
                else:
                    self.assert_close_curves(losses(self.folders[reference]), losses(folder), first_step=101)

    def start_job(self, name, config, ready):
        """`mpirun -np 2 rpb train config` as run `name`, in the background, once ready(folder) holds (or 60 s)."""
        folder = os.path.join(self.root, "runs", name)
        job = start(command(2, "train", config, "--set", "run.name=" + name), stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline and job.poll() is None and not ready(folder):
            time.sleep(0.02)
        return job, folder

    def assert_resumes_as_uninterrupted(self, config, name):
        """`--resume` finishes run `name`, and it ends with the bits of the same config run in one go."""
        r = run(2, "train", config, "--set", "run.name=" + name, "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(2, "train", config, "--set", f"run.name={name}_whole")
        self.assertEqual(r.returncode, 0, r.stderr)
        folder, whole = (os.path.join(self.root, "runs", n) for n in (name, name + "_whole"))
        self.assertEqual(losses(folder), losses(whole))
        self.assertEqual(datasets(os.path.join(folder, "step_00000600.h5")),
                         datasets(os.path.join(whole, "step_00000600.h5")))

    def test_kill_one_rank(self):
        config = self.write_config("kill.toml", steps=600, every=20)
        job, folder = self.start_job("killed", config, lambda f: os.path.exists(os.path.join(f, "latest")))
        victim = rank_pid(1, "run.name=killed")
        self.assertIsNotNone(victim, "rank 1's process was not found")
        os.kill(victim, signal.SIGKILL)
        t0 = time.time()
        out, _ = finish(job, 60)
        self.assertLess(time.time() - t0, 30, "the job outlived its killed rank")
        self.assertNotEqual(job.returncode, 0, out)
        self.assertRegex(out, r"rank 1\b", out)
        # `latest` names a whole checkpoint, which a process reads back.
        r = run(0, "inspect", os.path.join(folder, "latest"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_resumes_as_uninterrupted(config, "killed")

    def test_sigusr1_to_mpirun_stops_every_rank_after_one_step(self):
        # mpirun forwards SIGUSR1 to the ranks (SIGINT and SIGTERM make it kill the job): they agree on the step,
        # rank 0 saves it, every rank exits 0 through MPI_Finalize (any other status makes Open MPI report an aborted
        # job), and the resumed run ends as an uninterrupted one.
        config = self.write_config("usr1.toml", steps=600, every=0)
        job, folder = self.start_job("usr1", config, lambda f: line_count(os.path.join(f, "metrics.csv")) >= 20)
        job.send_signal(signal.SIGUSR1)
        out, _ = finish(job, 60)
        self.assertEqual(job.returncode, 0, out)
        self.assertEqual(banners(out), [], out)
        self.assertIn("interrupted by SIGUSR1", out)
        self.assertIn("every rank stopped cleanly: exit status 0", out)
        self.assertIn("resume with: mpirun -np 2 " + mpi_common.ARGS.rpb + " train", out)  # argv[0] as run
        with open(os.path.join(folder, "latest")) as f:
            self.assertNotEqual(f.read().strip(), "step_00000600.h5")
        self.assert_resumes_as_uninterrupted(config, "usr1")

    def test_an_error_on_one_rank_ends_every_rank(self):
        # mpirun's MPMD form gives rank 1 another command line: one it refuses (rank 1 fails before its first
        # collective, while rank 0 waits in it). Rank 1 names itself and calls MPI_Abort (mpirun's own notice of it is
        # not always printed).
        rank0 = [mpi_common.ARGS.rpb, "train", self.config, "--set", "run.name=bad_key"]
        cmd = [mpi_common.ARGS.mpirun, "-np", "1", *rank0, ":", "-np", "1", *rank0, "--set", "run.no_such_key=1"]
        t0 = time.time()
        r = run_command(cmd, 60)
        self.assertLess(time.time() - t0, 30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("[rank 1/2] [error]", r.stderr)
        self.assertIn("unknown key run.no_such_key", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "runs", "bad_key", "latest")))

    def test_a_config_that_differs_between_ranks_ends_every_rank_alike(self):
        # Rank 1 runs another seed: every rank learns it (Run::check_same_config), so all end through MPI_Finalize
        # with one process's status, rank 0 printing the difference once, rank 1 nothing (no MPI_Abort).
        rank0 = [mpi_common.ARGS.rpb, "train", self.config, "--set", "run.name=other_seed"]
        cmd = [mpi_common.ARGS.mpirun, "-np", "1", *rank0, ":", "-np", "1", *rank0, "--set", "run.seed=4"]
        t0 = time.time()
        r = run_command(cmd, 60)
        self.assertLess(time.time() - t0, 8, "the ranks waited for each other's ending (the default is 10 s)")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.count('rank 0 has "seed = 3", rank 1 "seed = 4"'), 1, r.stderr)
        self.assertIn("[rank 0/2] [error] train: rank 1 runs another config than rank 0", r.stderr)
        self.assertNotIn("[rank 1/2]", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "runs", "other_seed", "latest")))

    def test_an_error_ends_every_rank(self):
        t0 = time.time()
        r = run(2, "train", self.config, "--set", "run.name=bad", "--set", "run.batch=7", timeout=30)
        self.assertLess(time.time() - t0, 30)
        self.assertNotEqual(r.returncode, 0)
        # Every rank meets it: rank 0 prints it once, and no rank calls MPI_Abort.
        self.assertEqual(r.stderr.count("run.batch = 7 is the global batch, split evenly over the 2 MPI ranks"), 1,
                         r.stderr)
        self.assertNotIn("MPI_ABORT", r.stdout + r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "runs", "bad", "latest")))


def line_count(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def rank_pid(rank, marker):
    """The pid of the rpb process of MPI rank `rank` whose command line holds `marker`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if cmd and os.path.basename(cmd[0].decode()) == "rpb" and marker.encode() in cmd and \
                f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


if __name__ == "__main__":
    mpi_common.main(__doc__)
