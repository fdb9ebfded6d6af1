"""python -m vramtrace ARGS: the vramtrace command (see __init__.py)."""
import sys

from vramtrace import main

sys.exit(main())
