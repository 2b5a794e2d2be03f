def handler(event: dict, context=None) -> dict:
    return {"ok": True}
