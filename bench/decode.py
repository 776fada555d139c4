"""Typed decoding side by side: this tree against another (e.g. main, `git archive main | tar -x -C DIR`), in one
interleaved run, medians of N.

  page      one LIST page of 500 pods (taken from the snapshot, as the apiserver writes it: no kind on the items)
            turned into the model: this tree's kube/decode.page vs the other tree's list_page + pod_from_json
  snapshot  `json.load` of the snapshot, then `run --from-file SNAPSHOT --policy LNU -o json` and
            `balance --from-file SNAPSHOT -A -o json` of both trees, wall time and peak RSS of each process

    .venv/bin/python bench/decode.py --snapshot c30k.json --baseline /tmp/main-src --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf import POLICY  # the same LowNodeUtilization policy as the scale benchmark

HERE = Path(__file__).resolve().parents[1]
# Wall time and peak RSS of a child, printed last on stderr.
_TIMER = """
import resource, subprocess, sys, time
t = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("TIMED", time.perf_counter() - t, ru.ru_maxrss * 1024, file=sys.stderr)
sys.exit(code)
"""
_PAGE = """
import json, sys, time
src, page_file, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, src)
data = open(page_file, "rb").read()
try:
    from kubectl_desched.kube import decode
    parse = lambda: decode.page(data, "Pod")[0]
except ImportError:  # a tree before typed decoding
    from kubectl_desched.kube.live import list_page
    from kubectl_desched.model.objects import pod_from_json
    parse = lambda: [pod_from_json(o) for o in list_page(data, "/api/v1/pods")[0]]
times = []
for _ in range(runs):
    t = time.perf_counter()
    pods = parse()
    times.append(time.perf_counter() - t)
    assert len(pods) == 500
print(min(times))
assert decode.__file__.startswith(src) if "decode" in dir() else True
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    with tempfile.TemporaryFile() as err:
        # `python -m` puts the working directory first on the path: run where no tree is
        code = subprocess.run([sys.executable, "-c", _TIMER, *cmd], stderr=err, env=env,
                              cwd=tempfile.gettempdir()).returncode
        err.seek(0)
        text = err.read().decode(errors="replace")
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {code}: {text[-2000:]}")
    _, seconds, rss = text.rstrip().rsplit("\n", 1)[-1].split()
    return float(seconds), int(rss)


class _Items(msgspec.Struct):
    items: list[msgspec.Raw] = []


def page_file(snapshot: Path, out: Path) -> None:
    """500 pods of the snapshot as a LIST page (items without kind, as the apiserver sends them)."""
    with snapshot.open("rb") as f:
        items = msgspec.json.decode(f.read(), type=_Items).items
    pods = []
    for raw in items:
        obj = json.loads(bytes(raw))
        if obj.get("kind") == "Pod":
            obj.pop("kind")
            pods.append(obj)
            if len(pods) == 500:
                break
    out.write_text(json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"continue": "x"},
                               "items": pods}, separators=(",", ":")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshot", type=Path, required=True)
    ap.add_argument("--baseline", type=Path, required=True, help="the other source tree")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-page", action="store_true")
    ap.add_argument("--skip-balance", action="store_true")
    args = ap.parse_args()
    trees = {"this": HERE, "baseline": args.baseline.resolve()}
    with tempfile.TemporaryDirectory(prefix="bench-decode-") as d:
        tmp = Path(d)
        policy = tmp / "lnu.yaml"
        policy.write_text(POLICY)
        results: dict[str, list[tuple[float, int]]] = {}
        if not args.skip_page:
            page = tmp / "page.json"
            page_file(args.snapshot, page)
            for _ in range(args.runs):
                for name, tree in trees.items():
                    out = subprocess.run([sys.executable, "-c", _PAGE, str(tree), str(page), "20"],
                                         capture_output=True, text=True, check=True, cwd=tmp).stdout
                    results.setdefault(f"page of 500 pods ({name})", []).append((float(out), 0))
        for _ in range(args.runs):
            results.setdefault("json.load", []).append(timed(
                [sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", str(args.snapshot)],
                dict(os.environ)))
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                cli = [sys.executable, "-m", "kubectl_desched"]
                results.setdefault(f"run --from-file ({name})", []).append(timed(
                    [*cli, "run", "--from-file", str(args.snapshot), "--policy", str(policy), "-o", "json"], env))
                if not args.skip_balance:
                    results.setdefault(f"balance --from-file ({name})", []).append(timed(
                        [*cli, "balance", "--from-file", str(args.snapshot), "-A", "-o", "json"], env))
            print(f"run {_ + 1}/{args.runs} done", file=sys.stderr, flush=True)
    load = statistics.median(s for s, _ in results["json.load"])
    print(f"snapshot {args.snapshot.name}, {args.runs} runs, medians")
    print("| what | median s | peak RSS MB | ratio to json.load |")
    print("|---|---:|---:|---:|")
    for what, samples in results.items():
        secs = statistics.median(s for s, _ in samples)
        rss = max(r for _, r in samples)
        page = what.startswith("page")
        print(f"| {what} | {secs * (1000 if page else 1):.{1 if page else 2}f}{' ms' if page else ''} "
              f"| {'-' if page else f'{rss / 2**20:,.0f}'} | {'-' if page else f'{secs / load:.2f}'} |")


if __name__ == "__main__":
    main()
