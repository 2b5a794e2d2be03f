"""The version of letitloop, in a module of its own: every layer may read it without importing
the package's front door (which names the front ends)."""

__version__ = "0.1.0"
