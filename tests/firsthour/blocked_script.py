"""A script that blocks in approval() (run by test_scripts.py as a real process)."""

from letitloop import approval, durable, step


@durable(name="blocked", run_id="blocked-1")
def publish() -> bool:
    draft = step("draft", lambda: {"title": "Hello"})
    return approval("publish", draft, timeout="1h").approved


if __name__ == "__main__":
    print("APPROVED" if publish() else "REJECTED", flush=True)
