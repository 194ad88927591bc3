#!/usr/bin/env python3
"""Decode a recording with PyAV and check what it holds: the command line of bktools.probe."""
import sys

from bktools.probe import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
