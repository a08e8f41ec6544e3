"""``python -m blowfish_privacy``: the ``blowfish`` command (same options and subcommands)."""

from .cli import run

if __name__ == "__main__":
    run()
