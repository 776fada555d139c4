"""kubectl's connection flags (-s/--server, --token, --certificate-authority, --client-certificate, --client-key,
--insecure-skip-tls-verify, --tls-server-name, --disable-compression) laid over the kubeconfig's cluster and user
entries, with client-go's rules for which fields a flag clears. Pure dict work: the kubernetes client then loads the
result as a kubeconfig."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from kubectl_desched.errors import UsageError

# A bearer token from the command line wins over every other way the user entry would authenticate: client-go sends
# it and the exec or auth-provider plugin never runs; basic auth and a token cannot go together.
_TOKEN_REPLACES = ("tokenFile", "exec", "auth-provider", "username", "password")
# What would go into a header line: a line break would end the header (or fold the next line into it) and the HTTP
# client refuses the others with a traceback; Go's client refuses the same (a tab is allowed in a value).
_NOT_IN_A_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def header_problem(value: str) -> str | None:
    """Why `value` cannot be sent as an HTTP header value, or None."""
    if _NOT_IN_A_HEADER.search(value):
        return "must not contain line breaks or control characters"
    return None


def token_problem(token: str) -> str | None:
    """Why a bearer token cannot be sent, or None. A token is ASCII (RFC 6750); the HTTP client could not even
    encode most other characters."""
    if not token.isascii():
        return "must be ASCII text"
    return header_problem(token)


@dataclass(frozen=True)
class ConnectionFlags:
    server: str | None = None
    token: str | None = None
    certificate_authority: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    disable_compression: bool = False
    protobuf: bool = False  # pods and nodes asked for as protobuf (kube/protobuf.py)

    def any(self) -> bool:
        return any(v for v in vars(self).values())

    def check(self) -> None:
        """The flags' own mistakes, before any file is read: one line each, as kubectl reports them."""
        if self.server is not None and not self.server.strip():
            raise UsageError("-s/--server must not be empty")
        if self.token is not None and not self.token.strip():
            raise UsageError("--token must not be empty")
        if self.token is not None and (why := token_problem(self.token.strip())):
            raise UsageError(f"--token: {why}")
        if self.insecure_skip_tls_verify and self.certificate_authority:
            raise UsageError("--certificate-authority and --insecure-skip-tls-verify cannot be used together")
        for flag, path in (("--certificate-authority", self.certificate_authority),
                           ("--client-certificate", self.client_certificate), ("--client-key", self.client_key)):
            if path is not None and not os.path.isfile(os.path.expanduser(path)):
                raise UsageError(f"{flag} {path}: no such file")


def _path(value: str) -> str:
    # A path given on the command line is relative to the working directory, not to the kubeconfig's directory.
    return os.path.abspath(os.path.expanduser(value))


def cluster(entry: dict, flags: ConnectionFlags) -> dict:
    """The cluster entry's fields with the flags laid over them (client-go's getCluster)."""
    out = dict(entry)
    if flags.server:
        out["server"] = flags.server
    if flags.insecure_skip_tls_verify or flags.certificate_authority:
        # Either flag decides verification alone: the file's CA or skip setting would otherwise conflict or win.
        for key in ("insecure-skip-tls-verify", "certificate-authority", "certificate-authority-data"):
            out.pop(key, None)
        if flags.insecure_skip_tls_verify:
            out["insecure-skip-tls-verify"] = True
        else:
            out["certificate-authority"] = _path(flags.certificate_authority or "")
    if flags.tls_server_name or flags.server:
        # Another server makes the file's TLS server name wrong as well, unless the flag gives one.
        out.pop("tls-server-name", None)
        if flags.tls_server_name:
            out["tls-server-name"] = flags.tls_server_name
    if flags.disable_compression:  # the flag can only turn compression off, as client-go merges it
        out["disable-compression"] = True
    return out


def compression_disabled(entry: dict, where: str) -> bool:
    """The cluster entry's disable-compression (client-go's DisableCompression)."""
    return boolean(entry, "disable-compression", where)


def boolean(entry: dict, key: str, where: str) -> bool:
    """A boolean field of a kubeconfig entry, false when absent: a boolean, as kubectl requires (the kubernetes
    client would take the string "false" for true)."""
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise UsageError(f"{where}: {key} must be true or false")
    return value


def user(entry: dict, flags: ConnectionFlags) -> dict:
    """The user entry's fields with the flags laid over them (client-go's getAuthInfo)."""
    out = dict(entry)
    if flags.token:
        for key in _TOKEN_REPLACES:
            out.pop(key, None)
        out["token"] = flags.token
    for flag, key in ((flags.client_certificate, "client-certificate"), (flags.client_key, "client-key")):
        if flag:
            out.pop(f"{key}-data", None)
            out[key] = _path(flag)
    return out
