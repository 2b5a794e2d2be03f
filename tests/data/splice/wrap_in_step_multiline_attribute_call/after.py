"""Pipeline."""
import os
from letitloop import (
    atomic_marker,
    durable,
    step,
)


@durable
def summarize(user):
    return step(
        "llm_summary",
        client.chat.complete,
        model="small",  # cheap
        prompt=user["bio"],
    )
