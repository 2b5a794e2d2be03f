%%durable enrich
import time
%matplotlib inline
from letitloop import step

started = time.time()  # expect: LIL001
rows = step("load", lambda: [1, 2, 3])
!echo done
