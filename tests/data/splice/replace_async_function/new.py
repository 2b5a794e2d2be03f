async def fetch(url: str) -> bytes:
    async with session.get(url) as response:
        return await response.read()
