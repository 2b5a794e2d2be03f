import functools

# Section: caching helpers

# Cached because the lookup is slow.
@functools.lru_cache(maxsize=None)
def lookup(key):
    return key.upper()
