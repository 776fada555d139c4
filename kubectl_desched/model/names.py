"""The API server's syntax rules for names, label keys and label values (apimachinery's validation), so a flag
the server would refuse, or that could never match, is refused before anything is read or asked."""

from __future__ import annotations

import re

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253


def dns1123_label_problem(value: str) -> str | None:
    """Namespaces: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit."""
    if not value:
        return "must not be empty"
    if len(value) > LABEL_MAX:
        return f"must be at most {LABEL_MAX} characters"
    if not DNS1123_LABEL.fullmatch(value):
        return "must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a " \
               "letter or digit"
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    """Node names: at most 253 characters of DNS-1123 labels joined by '.'."""
    if not value:
        return "must not be empty"
    if len(value) > SUBDOMAIN_MAX:
        return f"must be at most {SUBDOMAIN_MAX} characters"
    if not DNS1123_SUBDOMAIN.fullmatch(value):
        return "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with " \
               "a letter or digit"
    return None


def label_key_problem(key: str) -> str | None:
    """A label key: an optional DNS-1123 subdomain prefix (at most 253) and '/', then a name of at most 63
    letters, digits, '-', '_' and '.', starting and ending with a letter or digit."""
    parts = key.split("/")
    if len(parts) > 2:
        return "a label key has at most one '/'"
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "the prefix before '/' must not be empty"
        problem = dns1123_subdomain_problem(prefix)
        if problem:
            return f"the prefix before '/' {problem}"
    else:
        name = parts[0]
    if not name:
        return "the name part must not be empty"
    if len(name) > LABEL_MAX:
        return f"the name part must be at most {LABEL_MAX} characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return "the name part must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def label_value_problem(value: str) -> str | None:
    """A label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter
    or digit."""
    if not value:
        return None
    if len(value) > LABEL_MAX:
        return f"must be at most {LABEL_MAX} characters"
    if not _QUALIFIED_NAME.fullmatch(value):
        return "must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None
