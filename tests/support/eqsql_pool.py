"""An emews pool job serving EQ-SQL tasks (no emews study): ``mpiexec -n N python
eqsql_pool.py URL TASK_TYPE CONFIG_JSON WORKDIR``; it leaves when it pops EQ-SQL's EQ_STOP."""

import json
import sys

from emews.pools.database import pool_job

if __name__ == "__main__":
    url, task_type, config, workdir = sys.argv[1:5]
    reason = pool_job(url, None, json.loads(config), int(task_type), workdir=workdir)
    if reason:
        print(f"emews: pool left: {reason}", flush=True)
