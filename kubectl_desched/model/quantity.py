"""Kubernetes resource quantities as floats: cpu in millicores, everything else in base units."""

import math
import re
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")  # no inf, nan or 1_000 as float() allows


@lru_cache(maxsize=4096, typed=True)  # typed: False and 0 are equal keys, and only one is a quantity
def parse_quantity(text: str | int | float) -> float:
    """Parse '250m', '1.5Gi', '2e3' or a number; raises ValueError on anything else, and on a value no float
    holds (1e999999999, NaN): the API server refuses those too."""
    value = _parse(text)
    if math.isinf(value) or math.isnan(value):
        raise ValueError(f"quantity out of range: {_shown(text)}")
    return value


def _shown(text: object) -> str:
    if isinstance(text, int) and text.bit_length() > 128:
        return "a very large integer"
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _parse(text: str | int | float) -> float:
    if isinstance(text, int | float) and not isinstance(text, bool):
        try:
            return float(text)
        except OverflowError:  # an integer too big for a float
            return math.inf
    if not isinstance(text, str):
        raise ValueError(f"not a quantity: {_shown(text)}")
    s = text.strip()
    if not s:
        raise ValueError("empty quantity")
    if len(s) > 64:  # the API's quantities are short; a long number is only slow to read
        raise ValueError(f"not a quantity: {_shown(text)}")
    if s[-2:] in _BINARY:
        return _number(s[:-2], text) * _BINARY[s[-2:]]
    if s[-1] in _DECIMAL:  # a trailing letter is a suffix ("1E" is exa); "1e3" ends in a digit
        return _number(s[:-1], text) * _DECIMAL[s[-1]]
    return _number(s, text)


def _number(s: str, text: str) -> float:
    if not _NUMBER.fullmatch(s):
        raise ValueError(f"not a quantity: {_shown(text)}")
    return float(s)


def resource_value(name: str, text: str | int | float) -> float:
    """The value we compute with: millicores for cpu, base units otherwise."""
    v = parse_quantity(text)
    return v * 1000.0 if name == "cpu" else v


def format_resource(name: str, value: float) -> str:
    if name == "cpu":
        return f"{value / 1000:g}" if value % 1000 == 0 else f"{value:.0f}m"
    if name == "memory" or name.endswith("storage"):
        for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if abs(value) >= size:
                return f"{value / size:.1f}{unit}".replace(".0" + unit, unit)
        return f"{value:.0f}"
    return f"{value:g}"


def fmt_pct(v: float) -> str:
    """A percentage as tables show it: one decimal, none when it is whole (52.5%, 50%). From the two decimals the
    documents keep, whatever it is given: a plugin's 1.953 and a table's 1.95 must both read 1.9%, where rounding
    the first directly gave 2% beside the table's 1.9% for the same node."""
    return f"{round(v, 2):.1f}%".replace(".0%", "%")
