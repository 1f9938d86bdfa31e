/*
   EQPy.swift: EMEWS EQ/Py for Swift/T, backed by emews.core._queues.

   A drop-in replacement for the classic module: EQPy_init_package, EQPy_get, EQPy_put and
   EQPy_stop have the classic signatures and meaning.

   Every call runs on the ME's resident rank (the location argument; Turbine reserves it with
   TURBINE_RESIDENT_WORK_WORKERS) in Turbine's persistent Python interpreter, as python_persist
   does, so emews.core._queues's two queues and the ME's thread live on between calls. Plain python() is
   never used: it would tear that interpreter down. The ME runs in a daemon thread (a
   non-daemon thread would hang the run at exit). Turbine keeps the GIL between calls, so the
   ME thread runs while EQPy_get waits on its queue, which is when the ME has work to do.

   Fixed or added, compared with the classic module:
   * EQPy_put delivers any string intact: the data reaches Python as a string literal made by
     python_literal(), where the classic module pasted it between double quotes, which broke
     on quotes, backslashes and newlines.
   * An ME whose run() raises, returns without "DONE", or whose package fails to import, is
     reported the same way: EQPy_get returns "EQPY_ABORT" and then the traceback.
   * A failure of this glue itself (emews not importable, say) aborts the job with Python's
     error message, as python_persist does.
*/

import location;
import python_literal;

pragma worktypedef resident_work;

/* python_persist, sent to the resident rank that @location names. */
@dispatch=resident_work
(string output) python_persist_resident(string code, string expr) "turbine" "0.1.0"
  [ "set <<output>> [ turbine::python 1 1 <<code>> <<expr>> ]" ];

string eqpy_init_code = ----
import traceback
import emews.core._queues
try:
    emews.core._queues.init(%s)
except Exception:
    emews.core._queues.output_q.put(emews.core._queues.EQPY_ABORT)
    emews.core._queues.output_q.put(traceback.format_exc())
----;

string eqpy_get_code = ----
import emews.core._queues
eqpy_message = emews.core._queues.output_q_get()
----;

string eqpy_put_code = ----
import emews.core._queues
emews.core._queues.input_q.put(%s)
----;

/* Import the ME package (a module name) and start its run() in a daemon thread. */
(void v) EQPy_init_package(location loc, string packageName)
{
  string code = eqpy_init_code % python_literal(packageName);
  string done = @location=loc python_persist_resident(code, "\"\"");
  v = propagate(done);
}

/* The ME's next message; after "EQPY_ABORT", the ME's traceback. */
(string result) EQPy_get(location loc)
{
  result = @location=loc python_persist_resident(eqpy_get_code, "str(eqpy_message)");
}

/* Answer the ME with any string. */
(void v) EQPy_put(location loc, string data)
{
  string code = eqpy_put_code % python_literal(data);
  string done = @location=loc python_persist_resident(code, "\"\"");
  v = propagate(done);
}

/* Nothing to do: the ME's thread is a daemon, and ends with the job. */
EQPy_stop(location loc)
{
}
