def query():
    sql = """
SELECT id,
       name
FROM users
"""
    return sql
