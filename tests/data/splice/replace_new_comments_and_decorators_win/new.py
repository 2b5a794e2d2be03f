# No cache any more: keys change.
@functools.wraps(str.lower)
@trace
def lookup(key):
    return key.lower()
