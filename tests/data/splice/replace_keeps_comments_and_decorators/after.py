import functools

# Section: caching helpers

# Cached because the lookup is slow.
# See ticket 42.
@functools.lru_cache(maxsize=None)  # unbounded
# keep this decorator last
@staticmethod
def lookup(key):
    return key.lower()
