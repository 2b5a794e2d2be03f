"""Async pipeline."""

import asyncio


async def run(url):
    body = await download(url)
    return body
