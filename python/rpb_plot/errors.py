"""The errors a request can end in, their exit codes, and the checks every reader of a request uses."""
import math

EXIT_ERROR, EXIT_BAD_REQUEST, EXIT_NO_MATPLOTLIB = 1, 2, 3


class RequestError(ValueError):
    """A request (or a file it names) that cannot be drawn: exit 2, the message says what and where."""


class MatplotlibMissing(RuntimeError):
    """matplotlib cannot be imported: exit 3."""


class WriteError(RuntimeError):
    """An output that cannot be written (a full disk, a read-only folder): exit 1, the message names the output the
    request asked for, never a temp file."""


MATPLOTLIB_MISSING = ("matplotlib is missing: install it with `apt-get install python3-matplotlib` "
                      "(scripts/deps.sh does)")


def require(condition, message):
    """Raises RequestError(message) unless `condition`."""
    if not condition:
        raise RequestError(message)


def finite(v):
    """Whether `v` is a finite int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
