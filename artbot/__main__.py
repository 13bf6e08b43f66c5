"""``python -m artbot``: the same command line as the ``artbot`` script."""

from .cli import main

if __name__ == "__main__":
    main()
