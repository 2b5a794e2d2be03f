%%durable report
from letitloop import step

rows = step("load", lambda: [1, 2, 3])
total = step("sum", sum, rows)
