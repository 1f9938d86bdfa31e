/*
   emews_objective.swift: evaluate one point in the worker's persistent Python interpreter
   (python_persist).

   emews_candle_model_train(): the classic CANDLE signature and result (the value, "NaN" when
   the evaluation failed), through emews.evaluate.candle_model_train; the model_*.swift
   modules, one of which swift-t imports with -i model_$CANDLE_MODEL_IMPL, each wrap it as
   candle_model_train, for your own Swift/T workflows.

   emews_model_train(): what workflow.swift calls: the whole outcome (value, status, error, log
   tail, times, rank, metrics) as one JSON object, for the store on the ME's rank
   (swift/emews_swift.py).

   emews.evaluate chooses how the point is evaluated from the environment (CANDLE_MODEL_IMPL:
   py, app, container or echo; see model_*.swift and models/README.md for the variables each
   reads), and puts each run in $TURBINE_OUTPUT/run/RUNID. A failed evaluation never aborts
   the workflow; the parameters reach Python through python_literal(), whatever they hold.
*/

import python;
import python_literal;

string emews_objective_code = ----
import emews.evaluate
model_result = emews.evaluate.candle_model_train(%s, %s, %s, %s)
----;

string emews_outcome_code = ----
import emews_swift
model_outcome = emews_swift.evaluate(%s, %s, %s, %s)
----;

string emews_outcome_par_code = ----
import emews_swift
model_outcome = emews_swift.evaluate_parallel(%s, %s, %s, %s)
----;

/*
   params: the point, a JSON object; expid: the experiment id; runid: this run's id (its
   directory is $TURBINE_OUTPUT/run/RUNID); model_name: MODEL_NAME. Returns the value to
   minimize, as a string ("NaN" when the evaluation failed).
*/
(string model_result) emews_candle_model_train(string params, string expid, string runid,
                                               string model_name)
{
  string code = emews_objective_code % (python_literal(params), python_literal(expid),
                                        python_literal(runid), python_literal(model_name));
  model_result = python_persist(code, "model_result");
}

/* The same arguments; returns the outcome, a JSON object (ASCII, no ";"). */
(string model_outcome) emews_model_train(string params, string expid, string runid,
                                         string model_name)
{
  string code = emews_outcome_code % (python_literal(params), python_literal(expid),
                                      python_literal(runid), python_literal(model_name));
  model_outcome = python_persist(code, "model_outcome");
}

/* The same, as a Swift/T parallel task of `ranks` workers (@par): the first starts the model's
   `ranks` processes with the site's launcher (emews.evaluate: app, container and py models
   alike) on the hosts of the task's workers, which wait meanwhile; its outcome is the task's. */
(string model_outcome) emews_model_train_par(int ranks, string params, string expid,
                                             string runid, string model_name)
{
  string code = emews_outcome_par_code % (python_literal(params), python_literal(expid),
                                          python_literal(runid), python_literal(model_name));
  model_outcome = @par=ranks python_parallel_persist(code, "model_outcome");
}
