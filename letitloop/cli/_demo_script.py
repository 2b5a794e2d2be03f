"""The pipeline ``lil demo`` writes to disk and runs: a template with __STEPS__ and __SEED__."""

from __future__ import annotations

SCRIPT_NAME = "demo_pipeline.py"
WORKFLOW = "demo_pipeline.digest_documents"
JOURNAL_DIR = "demo-journal"
STEP_LOG = "side_effects.log"
NOTIFICATIONS = "sent_notifications.txt"


def run_key(steps: int, seed: int) -> str:
    return f"seed{seed}-steps{steps}"


def render(steps: int, seed: int) -> str:
    return TEMPLATE.replace("__STEPS__", str(steps)).replace("__SEED__", str(seed))


TEMPLATE = '''\
"""A document-digest pipeline written by `lil demo`.

Each step asks a (fake, deterministic) language model to summarize one document, the last step
combines the summaries, and an atomic_marker fences the notification. Kill it anywhere
(kill -9) and run it again: finished steps are replayed from the journal, not run again.

    python demo_pipeline.py             run (or resume) the pipeline; print its result as JSON
    python demo_pipeline.py --expected  what an uninterrupted run returns, computed without
                                        the journal, the model delay or any side effect
"""

import hashlib
import json
import os
import sys
import time

from letitloop import atomic_marker, durable, step
from letitloop.testing import FakeLLM

HERE = os.path.dirname(os.path.abspath(__file__))
JOURNAL = os.path.join(HERE, "demo-journal", "journal.duckdb")
STEP_LOG = os.path.join(HERE, "side_effects.log")  # one line each time a step executes
NOTIFICATIONS = os.path.join(HERE, "sent_notifications.txt")  # one line per notification
STEPS = __STEPS__  # journaled steps: STEPS - 1 summaries, then one combine
SEED = __SEED__
TOPICS = ["invoices", "churn", "latency", "onboarding", "pricing", "outages", "hiring", "audits"]


def document(i):
    topic = TOPICS[(i * 5 + SEED) % len(TOPICS)]
    return f"Report {i} (seed {SEED}): notes on {topic}, {3 + (i * SEED) % 7} open issues."


def model_answer(prompt):
    """The deterministic 'model': its answer is derived from a hash of the prompt."""
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    if prompt.startswith("Combine"):
        return f"digest-{digest[:16]}"
    body = prompt.split(": ", 1)[-1]
    return f"{body[:36].rstrip()}... #{digest[:8]}"


def model_delay(prompt):
    return 0.05 + hashlib.sha256(prompt.encode()).digest()[0] / 255 * 0.05


llm = FakeLLM(replies=model_answer)  # letitloop's deterministic stand-in for a model


def fake_llm(prompt):
    """A model call: 50-100 ms of 'thinking', then a deterministic answer."""
    time.sleep(model_delay(prompt))
    return llm.complete(prompt).text


def record(path, line):
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\\n")
        f.flush()
        os.fsync(f.fileno())


def summarize_prompt(i):
    return f"Summarize in one line: {document(i)}"


def combine_prompt(summaries):
    return "Combine these summaries: " + " | ".join(summaries)


def summarize(i):
    summary = fake_llm(summarize_prompt(i))
    record(STEP_LOG, f"summarize_{i:02d} pid={os.getpid()}")  # this step's side effect
    return summary


def combine(summaries):
    digest = fake_llm(combine_prompt(summaries))
    record(STEP_LOG, f"combine pid={os.getpid()}")
    return digest


@durable(journal=JOURNAL, run_id=f"seed{SEED}-steps{STEPS}")
def digest_documents(steps, seed):
    summaries = [step(f"summarize_{i:02d}", summarize, i) for i in range(steps - 1)]
    digest = step("combine", combine, summaries)
    with atomic_marker("notify") as should_send:
        if should_send:
            record(NOTIFICATIONS, f"digest {digest} pid={os.getpid()}")
    return {"digest": digest, "summaries": summaries}


def expected():
    summaries = [model_answer(summarize_prompt(i)) for i in range(STEPS - 1)]
    delays = {f"summarize_{i:02d}": model_delay(summarize_prompt(i)) for i in range(STEPS - 1)}
    delays["combine"] = model_delay(combine_prompt(summaries))
    result = {"digest": model_answer(combine_prompt(summaries)), "summaries": summaries}
    return {"result": result, "model_seconds": delays}


if __name__ == "__main__":
    if "--expected" in sys.argv:
        print(json.dumps(expected()))
    else:
        print(json.dumps(digest_documents(STEPS, SEED)))
'''
