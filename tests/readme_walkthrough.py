"""README.md's walkthrough, run as written: the ```sh block after <!-- walkthrough --> runs line by line in a fresh
folder that looks like a clone after scripts/run.sh (configs/ and python/ of the source, build/rpb), each line
through bash. The first `rpb train` is interrupted with SIGINT once metrics.csv holds three rows, as the
block's comment tells the reader to do: it must exit 130 and print the resume command. Every other line must
exit 0, and what the comments promise is checked (metrics.csv's header, the eval record at 16x, the
generated ids, the PDFs). Lines that call /usr/bin/python3 are skipped (and said so) when torch or h5py is missing,
and the figures' lines when matplotlib is.

    python3 tests/readme_walkthrough.py --rpb build/rpb
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def walkthrough_lines():
    with open(os.path.join(SOURCE, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- walkthrough -->\n```sh\n(.*?)```", text, re.S)
    if not m:
        raise AssertionError("README.md has no ```sh block after <!-- walkthrough -->")
    return [line for line in m.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def fail(line, why, out=""):
    print(f"FAILED: {line}\n  {why}\n{out}", file=sys.stderr)
    sys.exit(1)


def interrupted_train(line, root):
    """Runs the first `rpb train`, SIGINT once metrics.csv holds three rows; returns its output."""
    proc = subprocess.Popen(["bash", "-c", line], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    metrics = os.path.join(root, "checkpoints", "t5", "metrics.csv")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(metrics) and len(open(metrics).read().splitlines()) >= 4:  # header + 3 rows
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        fail(line, f"finished (exit {proc.returncode}) before it could be interrupted", proc.stdout.read())
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: to the whole foreground group
    out = proc.communicate(timeout=300)[0]
    if proc.returncode != 130:
        fail(line, f"exit {proc.returncode} after SIGINT, expected 130", out)
    if "resume with: build/rpb train configs/t5.toml --resume" not in out:
        fail(line, "no 'resume with:' line", out)
    return out


def check_promises(line, out, root):
    run = os.path.join(root, "checkpoints", "t5")
    if line.startswith("cat checkpoints/t5/metrics.csv"):
        if not out.startswith("step,train_loss,valid_loss@64,lr,grad_norm,tokens,tokens_per_sec,elapsed_s\n"):
            fail(line, "metrics.csv's header differs from the README's", out)
    if " eval " in f" {line} ":
        record = json.loads(out)
        lengths = [r["length"] for r in record["lengths"]]
        if lengths != [64, 1024] or record["lengths"][-1]["tokens"] != 16384:
            fail(line, f"the record holds lengths {lengths}", out)
        if not any(n.endswith(".json") for n in os.listdir(os.path.join(run, "eval"))):
            fail(line, "nothing recorded in checkpoints/t5/eval/")
    if " generate " in f" {line} " and len(out.split()) < 200:
        fail(line, "fewer than 200 tokens printed", out)
    for figure in ("t5_bias.pdf", "curves.pdf"):
        if f" {figure}" in line:
            with open(os.path.join(root, figure), "rb") as f:
                if not f.read(5) == b"%PDF-":
                    fail(line, f"{figure} is not a PDF")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rpb", default=os.path.join(SOURCE, "build", "rpb"))
    args = p.parse_args()
    has_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch, h5py"], capture_output=True).returncode == 0
    has_matplotlib = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True).returncode == 0
    with tempfile.TemporaryDirectory(prefix="rpb_readme_") as root:
        for d in ("configs", "python"):
            os.symlink(os.path.join(SOURCE, d), os.path.join(root, d))
        os.makedirs(os.path.join(root, "build"))
        os.symlink(os.path.abspath(args.rpb), os.path.join(root, "build", "rpb"))
        lines = walkthrough_lines()
        interrupted = False
        for line in lines:
            print(f"$ {line}", flush=True)
            if line.startswith("/usr/bin/python3") and not has_torch:
                print("  skipped: /usr/bin/python3 cannot import torch and h5py")
                continue
            if (line.startswith("build/rpb plot ") or " --plot " in line) and not has_matplotlib:
                print("  skipped: /usr/bin/python3 cannot import matplotlib")
                continue
            if line.startswith("build/rpb train ") and not interrupted:
                interrupted_train(line, root)
                interrupted = True
                continue
            r = subprocess.run(["bash", "-c", line], cwd=root, capture_output=True, text=True)
            if r.returncode != 0:
                fail(line, f"exit {r.returncode}", r.stdout + r.stderr)
            check_promises(line, r.stdout, root)
        if not interrupted:
            fail("(walkthrough)", "no `build/rpb train` line to interrupt")
    print(f"README walkthrough: {len(lines)} commands ran as written")


if __name__ == "__main__":
    main()
