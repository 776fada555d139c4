"""The API server's address, from -s/--server or a kubeconfig cluster's `server`: checked before anything is sent, and
given a scheme as client-go gives one (rest.DefaultServerURL): a bare host[:port] is https when the connection has TLS
settings (a CA, a client certificate or insecure-skip-tls-verify), else http. Nothing here quotes the address: it may
hold a password, and a malformed one may defeat the masking of sanitize.mask_url."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from kubectl_desched.sanitize import one_line, shown

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def has_scheme(server: str) -> bool:
    return bool(_SCHEME.match(server))


def problem(server: object) -> str | None:
    """Why `server` cannot be the API server's address, or None: an http(s) URL with a host, or a bare host[:port]
    (client-go refuses a path after a bare host)."""
    import urllib3

    if not isinstance(server, str):
        return "must be a string"
    if _CONTROL.search(server):
        return "must not contain line breaks or control characters"
    url_text = server if has_scheme(server) else f"https://{server}"
    try:
        url = urlsplit(url_text)
        url.port  # noqa: B018  (raises for a port that is not a number from 0 to 65535)
    except ValueError as e:
        return f"not a URL: {one_line(e, 100)}"
    if url.scheme.lower() not in ("https", "http"):
        return f"the scheme must be https or http, not {shown(url.scheme)}"
    if not url.hostname:
        return "the URL names no host"
    if re.search(r"\s", url.netloc):
        return "the host must not contain spaces"
    if not has_scheme(server) and (url.path not in ("", "/") or url.query or url.fragment):
        return "without https:// or http:// it must be a bare host[:port], as in client-go"
    try:  # what urllib3 would refuse at the first request: a host such as exa%mple
        urllib3.util.parse_url(url_text)
    except urllib3.exceptions.LocationParseError:
        return "not a URL: the host or port is not valid"
    return None


def with_scheme(server: str, tls: bool) -> str:
    """client-go's scheme for a bare host[:port]: https when the connection has TLS settings, else http."""
    if has_scheme(server):
        return server
    return f"{'https' if tls else 'http'}://{server}"
