"""The script rpb runs (`rpb plot`, `rpb extrapolate`, `rpb inspect --plot`): the package folder run as a script,

    /usr/bin/python3 python/rpb_plot REQUEST.json        (or python3 -m rpb_plot REQUEST.json, python/ on sys.path)
    /usr/bin/python3 python/rpb_plot - < REQUEST.json    (the request on standard input: what rpb runs)

exit 0 when every output is written, 2 on a bad request (the reason on stderr), 3 when matplotlib is missing,
1 on anything else."""
import json
import os
import sys

if not __package__:  # run as a folder: import the package from python/, not its files from python/rpb_plot/
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    sys.path.insert(0, os.path.dirname(_here))

from rpb_plot.api import render  # noqa: E402
from rpb_plot.backend import matplotlib  # noqa: E402
from rpb_plot.errors import (EXIT_BAD_REQUEST, EXIT_ERROR, EXIT_NO_MATPLOTLIB, MATPLOTLIB_MISSING,  # noqa: E402
                             RequestError, WriteError)


def main(argv):
    """The script: rpb_plot REQUEST.json; returns the exit code."""
    if len(argv) != 2:
        print("usage: python3 python/rpb_plot REQUEST.json (- for standard input)", file=sys.stderr)
        return EXIT_BAD_REQUEST
    if matplotlib is None:
        print("rpb_plot: " + MATPLOTLIB_MISSING, file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    stdin = argv[1] == "-"
    try:
        if stdin:
            request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
        else:
            with open(argv[1], encoding="utf-8") as f:
                request = json.load(f)
        render(request, [] if stdin else [argv[1]])
        return 0
    except WriteError as e:
        print("rpb_plot: %s" % e, file=sys.stderr)
        return EXIT_ERROR
    except (RequestError, OSError, ValueError) as e:
        if not isinstance(e, RequestError) and "request" not in locals():
            e = RequestError("cannot read the request: %s" % e)
        if isinstance(e, RequestError):
            print("rpb_plot: bad request%s: %s" % ("" if stdin else " " + argv[1], e), file=sys.stderr)
            return EXIT_BAD_REQUEST
        print("rpb_plot: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 (the exit code says "anything else")
        print("rpb_plot: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv))
