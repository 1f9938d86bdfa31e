/*
   emews_objective.swift: evaluate one point with emews.evaluate.candle_model_train, in the
   worker's persistent Python interpreter (python_persist). The model_*.swift modules, one of
   which swift-t imports with -i model_$CANDLE_MODEL_IMPL, each wrap it as candle_model_train.

   emews.evaluate chooses how the point is evaluated from the environment (CANDLE_MODEL_IMPL:
   py, app, container or echo; see model_*.swift and models/README.md for the variables each
   reads), and puts each run in $TURBINE_OUTPUT/run/RUNID. A failed evaluation comes back as
   "NaN" rather than as an exception, so one bad point never aborts the workflow; the
   parameters reach Python through python_literal(), whatever they hold.
*/

import python;
import python_literal;

string emews_objective_code = ----
import emews.evaluate
model_result = emews.evaluate.candle_model_train(%s, %s, %s, %s)
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
