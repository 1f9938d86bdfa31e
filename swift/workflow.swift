/*
   workflow.swift: the EMEWS inversion-of-control loop, in batch mode.

   The study's master (emews run's, with the model-exploration algorithm, ME, in its thread:
   by default emews.core._me running an ask/tell algorithm) runs in a daemon thread on the
   resident rank RESIDENT_WORK_RANKS, which the first emews_swift.next_message() starts. Each
   call hands over what the master's pool has for the workers (emews_swift.py):

     "EVAL;RUNID;POINT;RUNID;POINT..."  evaluate them all, in parallel, on the workers;
                   emews_swift.tell() hands the outcomes, in order, back to the master
     "DONE"        the study ended (final.json and the store's final meta written there): end
     "ABORT"       the ME or the study failed: the reason is printed there; fail the job

   No argument: every setting comes from the environment (workflow.sh sets them all):
   TURBINE_OUTPUT (the experiment directory), RESIDENT_WORK_RANKS, MODEL_NAME, EMEWS_EXP_ID,
   EMEWS_ME (a classic EQ/Py module; default emews.core._me), EMEWS_RANKS_PER_EVAL (k > 1: each
   evaluation is a parallel task of k workers, @par=k, as Supervisor's workflows run them). Paths never pass through Tcl's argv,
   which breaks on quotes and spaces.
*/

import assert;
import io;
import location;
import python;
import string;
import sys;

import EQPy;
import python_literal;
import emews_objective;

string exp_id = getenv("EMEWS_EXP_ID");
string workflow_model_name = getenv("MODEL_NAME");
int me_rank = string2int(getenv("RESIDENT_WORK_RANKS"));
int ranks_per_eval = string2int(getenv("EMEWS_RANKS_PER_EVAL"));

string emews_next_code = ----
import emews_swift
emews_swift_message = emews_swift.next_message()
----;

string emews_tell_code = ----
import emews_swift
emews_swift.tell(%s)
----;

main
{
  loop(locationFromRank(me_rank));
}

/* Answer the ME's messages until it is done or has failed. */
(void v) loop(location ME)
{
  for (boolean again = true; again; again = more)
  {
    string message = @location=ME python_persist_resident(emews_next_code, "emews_swift_message");
    string parts[] = split(message, ";");
    boolean more;
    if (parts[0] == "EVAL")
    {
      evaluate(ME, parts) => more = true;
    }
    else if (parts[0] == "DONE")
    {
      more = false;
    }
    else
    {
      assert(false, "workflow.swift: the study failed: the reason is above") =>
        more = false;
    }
  }
  v = propagate();
}

/* Evaluate a batch in parallel; store the outcomes and answer the ME, in order. */
(void v) evaluate(location ME, string parts[])
{
  int n = (size(parts) - 1) %/ 2;
  string outcomes[];
  foreach k in [0 : n - 1]
  {
    if (ranks_per_eval > 1)
    {
      outcomes[k] = emews_model_train_par(ranks_per_eval, parts[2 * k + 2], exp_id,
                                          parts[2 * k + 1], workflow_model_name);
    }
    else
    {
      outcomes[k] = emews_model_train(parts[2 * k + 2], exp_id, parts[2 * k + 1],
                                     workflow_model_name);
    }
  }
  string code = emews_tell_code % python_literal(string_join(outcomes, ";"));
  string done = @location=ME python_persist_resident(code, "\"\"");
  v = propagate(done);
}
