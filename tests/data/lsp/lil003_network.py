import anthropic
import httpx
import requests
from openai import OpenAI

from letitloop import durable_async, durable, step

client = OpenAI()


@durable
def flow(url: str):
    page = requests.get(url)  # expect: LIL003
    with httpx.Client() as http:
        other = http.get(url)  # expect: LIL003
    answer = client.chat.completions.create(model="gpt-4o", messages=[])  # expect: LIL003
    claude = anthropic.Anthropic()
    note = claude.messages.create(model="claude", max_tokens=10, messages=[])  # expect: LIL003
    journaled = step("fetch", requests.get, url)
    return [page, other, answer, note, journaled]


@durable_async
async def async_flow(url: str):
    async with httpx.AsyncClient() as http:
        return await http.get(url)  # expect: LIL003
