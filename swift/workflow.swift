/*
   workflow.swift: the EMEWS inversion-of-control loop, in batch mode.

   The model-exploration algorithm (ME, by default emews.me running an ask/tell algorithm)
   runs in a daemon thread on the resident rank RESIDENT_WORK_RANKS and thinks it is in
   control; this loop answers its messages:

     "Params"      the handshake: answer with the settings (--settings, a JSON file path)
     points        JSON objects joined by ";": evaluate them all, in parallel, with
                   candle_model_train(), and answer with their results joined by ";", in order
     "DONE"        (or "FINAL") the next message is the final one: write it to
                   $TURBINE_OUTPUT/final.json and end
     "EQPY_ABORT"  the ME failed: print the traceback that follows and fail the job

   candle_model_train() comes from the module that swift-t -i model_$CANDLE_MODEL_IMPL imports.
   Arguments: --settings=FILE --exp_id=ID [--me=MODULE]. Environment: TURBINE_OUTPUT (the
   experiment directory), RESIDENT_WORK_RANKS, MODEL_NAME. workflow.sh sets them all.
*/

import assert;
import files;
import io;
import location;
import string;
import sys;

import EQPy;

string settings = argv("settings");
string exp_id = argv("exp_id");
string me_package = argv("me", "emews.me");
string turbine_output = getenv("TURBINE_OUTPUT");
string model_name = getenv("MODEL_NAME");
int me_rank = string2int(getenv("RESIDENT_WORK_RANKS"));

main
{
  location ME = locationFromRank(me_rank);
  EQPy_init_package(ME, me_package) =>
    loop(ME) =>
    EQPy_stop(ME);
}

/* Answer the ME's messages until it is done or has failed. */
(void v) loop(location ME)
{
  for (boolean again = true, int i = 1; again; again = more, i = i + 1)
  {
    string message = EQPy_get(ME);
    boolean more;
    if (message == "Params")
    {
      EQPy_put(ME, settings) => more = true;
    }
    else if (message == "DONE" || message == "FINAL")
    {
      v = write_final(ME) => more = false;
    }
    else if (message == "EQPY_ABORT")
    {
      v = report_abort(ME) => more = false;
    }
    else
    {
      evaluate(ME, message, i) => more = true;
    }
  }
}

/* Evaluate a message of points in parallel; answer with the results, in order. */
(void v) evaluate(location ME, string message, int iteration)
{
  string points[] = split(message, ";");
  string results[];
  foreach point, j in points
  {
    string run_id = "run_%03i_%04i" % (iteration, j);
    results[j] = candle_model_train(point, exp_id, run_id, model_name);
  }
  v = EQPy_put(ME, string_join(results, ";"));
}

/* The message after "DONE" is the ME's final word: keep it in the experiment directory. */
(void v) write_final(location ME)
{
  string final_message = EQPy_get(ME);
  string path = turbine_output + "/final.json";
  file final_file <path> = write(final_message + "\n");
  v = propagate(final_file);
}

/* Print the ME's traceback, then fail the job (a non-zero exit). */
(void v) report_abort(location ME)
{
  string traceback_text = EQPy_get(ME);
  printf("workflow.swift: the model-exploration algorithm failed (EQPY_ABORT):\n%s",
         traceback_text) =>
    v = propagate() =>
    assert(false, "workflow.swift: EQPY_ABORT: the ME's traceback is above");
}
