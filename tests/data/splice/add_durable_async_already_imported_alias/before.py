from letitloop import durable_async as lil_durable


async def crawl(site):
    return site
