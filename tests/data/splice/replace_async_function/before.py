import asyncio


async def fetch(url: str) -> bytes:
    await asyncio.sleep(0)
    return b""


async def main():
    return await fetch("x")
