"""Pipeline."""
import os
from letitloop import (
    atomic_marker,
    durable,
)


@durable
def summarize(user):
    return client.chat.complete(
        model="small",  # cheap
        prompt=user["bio"],
    )
