"""``python -m letitloop.lsp``: the same command line as ``lil lsp``."""

from letitloop.lsp import main

if __name__ == "__main__":
    main()
