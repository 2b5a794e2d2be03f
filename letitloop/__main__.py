"""``python -m letitloop``: the ``lil`` command line."""

from letitloop.cli import main

if __name__ == "__main__":
    main()
