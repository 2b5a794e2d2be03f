"""Async pipeline."""

import asyncio
from letitloop import async_step


async def run(url):
    body = await async_step("download", download, url)
    return body
