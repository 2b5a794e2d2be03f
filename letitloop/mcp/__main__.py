"""``python -m letitloop.mcp``: the same command as ``lil mcp``."""

from letitloop.mcp._command import mcp

if __name__ == "__main__":
    mcp(prog_name="python -m letitloop.mcp")
