"""Read a big JSON document without holding it: the elements of its large arrays (a top-level array,
or the "items" of a top-level object, as in `kubectl get -o json`) are handed over one at a time.

`kubectl get pods -A -o json` of 150,000 pods is 3.5 GB; json.load of it needs 6-9 GB of dicts. Here
only one chunk of text and one item's dicts are alive at a time. Each value is still parsed by the
standard library's C scanner (JSONDecoder.raw_decode), so the speed is json.load's.

What is read is bounded (kubectl_desched/safeload.py): the whole text, each value, and how deep a value nests;
NaN and Infinity, which Python's json would take, are refused."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TextIO

from kubectl_desched import safeload
from kubectl_desched.safeload import MAX_JSON_OBJECT_CHARS, describe_size
from kubectl_desched.safeload import MAX_JSON_SNAPSHOT_CHARS as MAX_JSON_SNAPSHOT_CHARS  # snapshot.py reads it here

CHUNK = 1 << 23  # characters read at a time; an item cut by a chunk's end is parsed again, whole
_WS = re.compile(r"[ \t\n\r]*")
_BIG_INT = "integer string conversion"  # Python's message for an integer of more than 4,300 digits


class Refused(ValueError):
    """Text the reader will not take although it may be valid JSON (too big, too deep, NaN), with where it is."""

    def __init__(self, msg: str, lineno: int, colno: int) -> None:
        super().__init__(f"{msg}: line {lineno} column {colno}")
        self.msg, self.lineno, self.colno = msg, lineno, colno


class _Buffer:
    """A window on the text. For error positions it knows how much text lies before it; the lines in there are
    counted as the text is dropped only when the input cannot be read again (a pipe): counting 3.5 GB costs
    seconds, while a file is simply read again up to the error."""

    def __init__(self, f: TextIO, head: str) -> None:
        self.f = f
        self.buf = head
        self.pos = 0
        self.eof = False
        self.dropped = 0  # characters before the buffer
        try:
            self.count_lines = not f.seekable()
        except (OSError, ValueError):
            self.count_lines = True
        self.lines_before = 0  # newlines in the dropped text, when counted
        self.col_before = 0  # characters after its last newline
        if len(head) > MAX_JSON_SNAPSHOT_CHARS:
            raise self.refused(f"larger than the {describe_size(MAX_JSON_SNAPSHOT_CHARS)} a snapshot may have", 0)

    def more(self) -> bool:
        """Drop what has been read, append a chunk; False at the end of the input."""
        if self.eof:
            return False
        chunk = self.f.read(CHUNK)
        if not chunk:
            self.eof = True
            return False  # nothing moves: positions in the buffer stay valid for errors
        if self.dropped + len(self.buf) + len(chunk) > MAX_JSON_SNAPSHOT_CHARS:
            raise self.refused(f"larger than the {describe_size(MAX_JSON_SNAPSHOT_CHARS)} a snapshot may have",
                               len(self.buf))
        if self.count_lines:
            self._count(self.buf, self.pos)
        self.dropped += self.pos
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def _count(self, text: str, end: int) -> None:
        nl = text.count("\n", 0, end)
        if nl:
            self.lines_before += nl
            self.col_before = end - text.rfind("\n", 0, end) - 1
        else:
            self.col_before += end

    def _count_dropped_again(self) -> None:
        """Read the input again from its start up to the buffer, counting its lines."""
        self.lines_before = self.col_before = 0
        try:
            self.f.seek(0)
            left = self.dropped
            while left > 0:
                text = self.f.read(min(CHUNK, left))
                if not text:
                    break
                self._count(text, len(text))
                left -= len(text)
        except (OSError, ValueError):
            pass  # then the line is counted from where the buffer starts

    def position(self, pos: int) -> tuple[int, int]:
        """Line and column in the whole input of a position in the buffer."""
        if self.dropped and not self.count_lines:
            self._count_dropped_again()
        buf = self.buf
        line = self.lines_before + buf.count("\n", 0, pos) + 1
        last = buf.rfind("\n", 0, pos)
        return line, pos - last if last >= 0 else self.col_before + pos + 1

    def refused(self, msg: str, pos: int) -> Refused:
        return Refused(msg, *self.position(pos))

    def error(self, msg: str, pos: int) -> json.JSONDecodeError:
        """json's error, with the line and column in the whole input."""
        line, col = self.position(pos)
        e = json.JSONDecodeError(msg, "", 0)
        e.lineno, e.colno, e.pos = line, col, pos
        e.args = (f"{msg}: line {line} column {col}",)
        return e

    def skip_ws(self) -> str:
        """Skip whitespace; the next character, "" at the end."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.skip_ws()
        if not c or c not in chars:
            raise self.error(f"Expecting {what}", self.pos)
        self.pos += 1
        return c

    def value(self, above: int, depth: int) -> Any:
        """Parse one whole value at the current position, reading on while it is cut by the buffer's end.
        `above`: how many arrays and objects of the document hold it (they count towards the depth bound);
        `depth`: this call's recursion depth (safeload.raw_decode), which the callers know."""
        self.skip_ws()
        while True:
            try:
                obj, end = safeload.raw_decode(self.buf, self.pos, above=above, depth=depth)
            except json.JSONDecodeError as e:
                # An error at the very end, or a string still open, may just be a value cut in two.
                cut = e.pos >= len(self.buf) - 16 or e.msg.startswith("Unterminated string")
                if cut and len(self.buf) - self.pos > MAX_JSON_OBJECT_CHARS:
                    raise self.refused(f"a value larger than {describe_size(MAX_JSON_OBJECT_CHARS)}",
                                       self.pos) from None
                if cut and self.more():
                    continue
                raise self.error(e.msg, e.pos) from None
            except (safeload.TooDeep, safeload.NotJson) as e:
                raise self.refused(str(e), self.pos) from None
            except ValueError as e:
                if _BIG_INT not in str(e):
                    raise
                raise self.refused("an integer of more than 4,300 digits", self.pos) from None
            if end == len(self.buf) and not self.eof and self.more():
                continue  # a number may go on in the next chunk
            if end - self.pos > MAX_JSON_OBJECT_CHARS:
                raise self.refused(f"a value larger than {describe_size(MAX_JSON_OBJECT_CHARS)}", self.pos)
            self.pos = end
            return obj


def _array(b: _Buffer, each: Callable[[Any], None], above: int, depth: int) -> None:
    """`depth`: the caller's recursion depth."""
    b.expect("[", "'['")
    if b.skip_ws() == "]":
        b.pos += 1
        return
    while True:
        each(b.value(above + 1, depth + 2))
        if b.expect(",]", "',' delimiter") == "]":
            return


def stream_json(f: TextIO, head: str, each: Callable[[Any], None]) -> Any:
    """Parse the JSON text `head` + the rest of `f`. The elements of a top-level array and of a top-level
    object's "items" array go to `each` one by one instead of into the result; the result is the document
    without them (the object, with "items" left out, or None for a top-level array).
    Raises json.JSONDecodeError with the line and column in the whole text, Refused for what it will not read."""
    b = _Buffer(f, head)
    depth = safeload.recursion_depth() or 0  # asked once: the bound on nesting then costs nothing per value
    c = b.skip_ws()
    doc: Any = None
    if c == "[":
        _array(b, each, 0, depth)
    elif c == "{":
        b.pos += 1
        doc = {}
        if b.skip_ws() == "}":
            b.pos += 1
        else:
            while True:
                if b.skip_ws() != '"':
                    raise b.error("Expecting property name enclosed in double quotes", b.pos)
                key = b.value(1, depth + 1)
                b.expect(":", "':' delimiter")
                if key == "items" and b.skip_ws() == "[":
                    _array(b, each, 1, depth)
                else:
                    doc[key] = b.value(1, depth + 1)
                if b.expect(",}", "',' delimiter") == "}":
                    break
    else:
        doc = b.value(0, depth + 1)  # a scalar: not objects, the caller says so
    if b.skip_ws():
        raise b.error("Extra data", b.pos)
    return doc
