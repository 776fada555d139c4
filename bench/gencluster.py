#!/usr/bin/env python3
"""`python bench/gencluster.py --nodes N --pods M [...]`: the command line of the cluster generator, which lives in
bench/clustergen/ (its docstring says what it makes). Kept at this path for the commands and scripts that run it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/, where clustergen is

from clustergen.cli import main

if __name__ == "__main__":
    sys.exit(main())
