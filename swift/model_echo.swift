/*
   model_echo.swift: candle_model_train() for CANDLE_MODEL_IMPL=echo. No model runs; the
   value is the sum of squares of the numeric parameters: for trying out a workflow, a site
   or an algorithm quickly.
   swift-t -i model_echo imports it (workflow.sh passes -i model_$CANDLE_MODEL_IMPL);
   emews_objective.swift does the work.
*/

import emews_objective;

(string model_result) candle_model_train(string params, string expid, string runid,
                                         string model_name)
{
  model_result = emews_candle_model_train(params, expid, runid, model_name);
}
