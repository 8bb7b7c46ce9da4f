"""What a child Python process needs to import what this one imports. Task hosts import the topology
by reference ('module:attr'), from wherever the process that starts them found it: the application's
own folder (a driver run as `python my_app.py`), the files Spark ships to executors (`--py-files`,
`spark.submit.pyFiles`), an unpacked archive. A host started with only the installed packages on its
path could not find an application's module."""

from __future__ import annotations

import os
import sys


def child_pythonpath() -> str:
    """This process's import path as a PYTHONPATH value: every `sys.path` entry in order, made
    absolute (the empty entry is the current directory), without repeats."""
    entries: list[str] = []
    for entry in sys.path:
        absolute = os.path.abspath(entry or os.curdir)
        if absolute not in entries:
            entries.append(absolute)
    return os.pathsep.join(entries)
