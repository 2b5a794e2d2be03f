def query():
    return "SELECT 1"
