try:
    import ujson as json

    def dumps(value):
        return json.dumps(value)
except ImportError:
    import json

    def dumps(value):
        return json.dumps(value, separators=(",", ":"))
