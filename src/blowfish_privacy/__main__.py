"""``python -m blowfish_privacy``: the ``blowfish`` command (same options and subcommands)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
