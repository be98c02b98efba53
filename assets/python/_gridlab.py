"""The channel between a Python program and gridlab, which runs its kernels.

gridlab starts this interpreter with `gridlab_host.py` and reads framed messages from its
standard output; it answers on standard input. A frame is an 8-byte little-endian length, a
JSON header of that length, then the raw bytes the header announces (`payload` bytes).
Everything the program prints travels as `out` messages, so its text and gridlab's reports
reach the terminal in the order they happened.
"""

import json
import os
import struct
import sys

_out = None
_inp = None


def connect(out_stream, in_stream):
    global _out, _inp
    _out = out_stream
    _inp = in_stream


def send(header, payload=b""):
    header = dict(header)
    header["payload"] = len(payload)
    data = json.dumps(header).encode("utf-8")
    _out.write(struct.pack("<Q", len(data)))
    _out.write(data)
    if payload:
        _out.write(payload)
    _out.flush()


def receive():
    raw = _inp.read(8)
    if len(raw) < 8:
        raise SystemExit(3)
    (n,) = struct.unpack("<Q", raw)
    header = json.loads(_inp.read(n).decode("utf-8"))
    size = header.get("payload", 0)
    payload = _inp.read(size) if size else b""
    return header, payload


def own_traceback(tb):
    """The traceback of the learner's own frames, as text: gridlab's (its runners, runpy, the
    stand-in `numba`, all in this folder or frozen) are not their business, and a failure at
    one line of theirs needs no traceback at all (empty)."""
    import traceback
    here = os.path.dirname(os.path.abspath(__file__))
    frames = [
        f for f in traceback.extract_tb(tb)
        if not f.filename.startswith(here) and not f.filename.startswith("<frozen")
    ]
    if len(frames) < 2:
        return ""
    return "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))


def request(header, payload=b""):
    send(header, payload)
    return receive()


class Output:
    """sys.stdout / sys.stderr: text goes to gridlab as `out` messages."""

    def __init__(self, stream):
        self.stream = stream
        self.encoding = "utf-8"
        self.errors = "replace"

    def write(self, text):
        if text:
            send({"op": "out", "stream": self.stream, "text": str(text)})
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def fileno(self):
        raise OSError("gridlab's output has no file descriptor")


class KernelError(Exception):
    """A kernel gridlab refused or could not run; gridlab has shown why, at its line."""
