"""Make text we did not write safe to print: what an API server (or a proxy in front of it) says, and values the
user typed that we echo back. A hostile or broken server must not be able to forge a second `error:` line with a
newline, drive the terminal with escape codes, or flood it with a 2 MB message."""

from __future__ import annotations

import re
import unicodedata

SERVER_TEXT_LIMIT = 400  # what one server message may take in a line we print
LINE_LIMIT = 1000  # the final guard on a whole `error:` / `warning:` line (ours plus what we quoted)
VALUE_LIMIT = 60  # a value the user typed, quoted back in an error

# Categories a terminal or str.splitlines() acts on: controls (C0, DEL, C1: newlines, ESC), format characters
# (bidi overrides that reorder what is shown), line/paragraph separators and lone surrogates.
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
_ALL_SAFE = re.compile(r"[\x20-\x7e]*")  # plain printable ASCII: the common case, no per-character work


def _escape(ch: str) -> str:
    if unicodedata.category(ch) not in _UNSAFE_CATEGORIES:
        return ch
    code = ord(ch)
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    if ch == "\t":
        return "\\t"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# How a URL's credentials are shown: a password as kubectl's errors show it (Go's net/http client writes
# `admin:***@`), and the value of a query parameter whose name looks like a credential (?access_token=, a signed
# URL's signature) alike.
URL_MASK = "***"
_URL_PASSWORD = re.compile(r"(://[^/?#\s:@]*):[^/?#\s]*@")  # to the authority's last @, as url.Parse splits it
_URL_SECRET_PARAM = re.compile(
    r"([?&;][^=&#;\s]*(?:token|pass|pwd|secret|key|sig|auth|credential|session)[^=&#;\s]*=)"
    r"[^&#;\s\"'<>]*?(?=[&#;\s\"'<>]|:\s|:?$)", re.I)  # a value ends where the URL does, e.g. before `: reason`


def mask_url(text: str) -> str:
    """A URL, or any text that quotes URLs, with the password of their user-info and their credential-like query
    parameters masked: `https://admin:***@host`, `?access_token=***`. The user name stays, as kubectl shows it."""
    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\1:{URL_MASK}@", text)
    if "=" in text:
        text = _URL_SECRET_PARAM.sub(rf"\1{URL_MASK}", text)
    return text


REDACTED = "<redacted>"
_MIN_SECRET = 4  # a shorter one would take words out of every message
_held: tuple[str, ...] = ()  # longest first, so that a secret containing another is replaced whole


def hold(*secrets: str | None) -> None:
    """Credentials the tool holds (a token, a password, client key material, an exec plugin's token, what a token
    file holds): kube/config.py hands each over as it loads it, and redact() takes them out of any text shown."""
    global _held
    new = {s for s in secrets if s and len(s) >= _MIN_SECRET} - set(_held)
    if new:
        _held = tuple(sorted({*_held, *new}, key=len, reverse=True))


def forget_held() -> None:
    """For tests: one test's credentials must not take words out of the next one's output."""
    global _held
    _held = ()


def redact(text: str) -> str:
    """The text without any credential the tool holds, and with URL credentials masked (mask_url)."""
    for secret in _held:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return mask_url(text)


def escaped(text: str) -> str:
    """`text` with its control and format characters as visible escapes (a newline becomes the two characters
    \\n), nothing cut and nothing redacted: a name or key echoed in a message, on one line."""
    if _ALL_SAFE.fullmatch(text):
        return text
    return "".join(_escape(ch) for ch in text)


def one_line(text: object, limit: int = SERVER_TEXT_LIMIT) -> str:
    """`text` as one printable line of at most about `limit` characters: control and format characters are
    replaced by visible escapes (a newline becomes the two characters \\n), and a longer text is cut with a
    marker that says how long it was. No credential is left in it (redact): a server may echo the caller's token."""
    s = redact(str(text).strip())
    if len(s) <= limit and _ALL_SAFE.fullmatch(s):
        return s
    out: list[str] = []
    size = 0
    for ch in s:
        piece = _escape(ch)
        if size + len(piece) > limit:
            return "".join(out) + f"... [cut: {len(s):,} characters in all]"
        out.append(piece)
        size += len(piece)
    return "".join(out)


def shown(value: object, limit: int = VALUE_LIMIT) -> str:
    """A value to quote back in an error message, quoted, made printable and shortened: `'9999...'`."""
    return "'" + one_line(value, limit).replace("'", "\\'") + "'"


def short(text: str, limit: int = 120) -> str:
    """Whitespace runs folded to one space, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
