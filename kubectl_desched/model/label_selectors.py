"""Label selectors in both forms Kubernetes uses: the string form (`-l app=web,tier!=db`, a policy's
nodeSelector) and the LabelSelector object (matchLabels / matchExpressions)."""

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_desched.model.names import label_key_problem, label_value_problem
from kubectl_desched.model.shapes import describe, not_a, printable
from kubectl_desched.sanitize import shown

Matcher = Callable[[Mapping[str, str]], bool]

_SET_EXPR = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_EXPR = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)\s*$")


def _match_all(_labels: Mapping[str, str]) -> bool:
    return True


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (empty terms kept, to be refused)."""
    terms: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    terms.append("".join(cur))
    return terms


def _check_term(term: str, key: str, values: list[str]) -> None:
    """The API server's checks on one requirement: a valid label key and valid label values."""
    problem = label_key_problem(key)
    if problem:
        raise ValueError(f"invalid label key {shown(key)}: {problem}")
    for value in values:
        problem = label_value_problem(value)
        if problem:
            raise ValueError(f"invalid label value {shown(value)} in {shown(term.strip())}: {problem}")


def parse_selector(text: str | None) -> Matcher:
    """Compile a string selector with the API server's syntax rules; raises ValueError naming the bad term.
    Blank text selects everything, as in Kubernetes; an empty term (`a=b,,`) is an error there too."""
    if text is None or not text.strip():
        return _match_all
    requirements: list[Matcher] = []
    for term in _split_terms(text):
        if not term.strip():
            raise ValueError(f"empty term in label selector {shown(text)}: remove the extra ','")
        m = _EQ_EXPR.match(term)
        if m:
            key, op, value = m.groups()
            _check_term(term, key, [value])
            if op == "!=":
                requirements.append(_not_equal(key, value))
            else:
                requirements.append(_equal(key, value))
            continue
        m = _SET_EXPR.match(term)
        if not m:
            raise ValueError(f"invalid label selector term {shown(term.strip())}")
        negate, key, op, values = m.groups()
        if op:
            if negate:
                raise ValueError(f"invalid label selector term {shown(term.strip())}")
            # As the API server parses them: "in ()" is the empty value, "in (a,,b)" includes it.
            vals = [v.strip() for v in values.split(",")]
            _check_term(term, key, vals)
            requirements.append(_set_requirement(key, "In" if op == "in" else "NotIn", frozenset(vals)))
        else:
            _check_term(term, key, [])
            requirements.append(_set_requirement(key, "DoesNotExist" if negate else "Exists", frozenset()))
    return _all_of(requirements)


def selector_keys(text: str) -> list[str]:
    """The label keys a string selector (one parse_selector accepts) names, in order, each once."""
    keys: list[str] = []
    for term in _split_terms(text):
        m = _EQ_EXPR.match(term) or _SET_EXPR.match(term)
        key = m.group(1) if m and m.re is _EQ_EXPR else m.group(2) if m else None
        if key and key not in keys:
            keys.append(key)
    return keys


def _set_requirement(key: str, operator: str, values: frozenset[str]) -> Matcher:
    if operator == "In":
        return lambda lb: lb.get(key) in values
    if operator == "NotIn":
        return lambda lb: lb.get(key) not in values  # a missing key matches NotIn, as in Kubernetes
    if operator == "Exists":
        return lambda lb: key in lb
    if operator == "DoesNotExist":
        return lambda lb: key not in lb
    raise ValueError(f"unknown operator {operator!r}")


def _equal(key: str, value: str) -> Matcher:
    return lambda labels: labels.get(key) == value


def _not_equal(key: str, value: str) -> Matcher:
    return lambda labels: labels.get(key) != value


def _all_of(requirements: list[Matcher]) -> Matcher:
    if not requirements:
        return _match_all
    if len(requirements) == 1:
        return requirements[0]
    return lambda lb: all(r(lb) for r in requirements)


def label_selector(obj: Mapping[str, Any] | None, *, empty_matches_all: bool = True) -> Matcher:
    """Compile a LabelSelector object. An empty selector matches everything (PodDisruptionBudget in
    policy/v1 and plugin args); a null one is handled by the caller. Keys and values must be strings, as the API
    server requires: a YAML `yes` is a boolean there, and is refused here too (it would match no label)."""
    if obj is None or (isinstance(obj, Mapping) and not obj):
        return _match_all if empty_matches_all else (lambda _lb: False)
    if not isinstance(obj, Mapping):
        raise ValueError(f"a label selector must be an object with matchLabels and/or matchExpressions, "
                         f"not {describe(obj)}")
    requirements: list[Matcher] = []
    match_labels = obj.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise ValueError("matchLabels must be a map of strings")
    for k, v in match_labels.items():
        if not isinstance(k, str):
            raise ValueError(f"matchLabels: keys must be strings, not {describe(k)}")
        if not isinstance(v, str):
            raise ValueError(f"matchLabels.{printable(k)}: {not_a('a string', v)}")
        requirements.append(_equal(k, v))
    expressions = obj.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError(f"matchExpressions must be a list, not {describe(expressions)}")
    for i, expr in enumerate(expressions):
        if not isinstance(expr, Mapping) or "key" not in expr or "operator" not in expr:
            raise ValueError(f"matchExpressions[{i}] needs key and operator")
        key, op, raw_values = expr["key"], expr["operator"], expr.get("values") or []
        if not isinstance(key, str):
            raise ValueError(f"matchExpressions[{i}].key: {not_a('a string', key)}")
        if not isinstance(raw_values, list):
            raise ValueError(f"matchExpressions[{i}].values: {not_a('a list of strings', raw_values)}")
        for j, v in enumerate(raw_values):
            if not isinstance(v, str):
                raise ValueError(f"matchExpressions[{i}].values[{j}]: {not_a('a string', v)}")
        values = frozenset(raw_values)
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"matchExpressions[{i}]: operator {op} needs values")
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"matchExpressions[{i}]: operator {op} takes no values")
        if not isinstance(op, str) or op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            shown = repr(op) if isinstance(op, str) else describe(op)
            raise ValueError(f"matchExpressions[{i}]: unknown operator {shown}")
        requirements.append(_set_requirement(key, op, values))
    return _all_of(requirements)
