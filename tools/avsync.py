#!/usr/bin/env python3
"""A/V sync of a recording from flash/beep pairs: the command line of bktools.avsync (see there)."""
import sys

from bktools.avsync import main

if __name__ == "__main__":
    sys.exit(main())
