"""Adapters that put other frameworks' state in the letitloop journal (imported on demand)."""
