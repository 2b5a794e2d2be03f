def handler(event: dict, context = None) -> dict:  # same signature, new body
    return {"ok": bool(event)}
