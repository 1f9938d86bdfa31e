/*
   model_app.swift: candle_model_train() for CANDLE_MODEL_IMPL=app. The model is a command
   (EMEWS_APP, a JSON list) that emews runs in its own process, in the run's directory, with
   params.json there, its output in model.log and a hard timeout; the result is result.txt or
   the last IMPROVE_RESULT line of its output.
   swift-t -i model_app imports it (workflow.sh passes -i model_$CANDLE_MODEL_IMPL);
   emews_objective.swift does the work.
*/

import emews_objective;

(string model_result) candle_model_train(string params, string expid, string runid,
                                         string model_name)
{
  model_result = emews_candle_model_train(params, expid, runid, model_name);
}
