/*
   model_py.swift: candle_model_train() for CANDLE_MODEL_IMPL=py. The model is a Python
   function (EMEWS_OBJECTIVE, "module:function"; without one, emews's CANDLE model runner for
   MODEL_NAME), imported once per worker and called in the worker's persistent interpreter.
   swift-t -i model_py imports it (workflow.sh passes -i model_$CANDLE_MODEL_IMPL);
   emews_objective.swift does the work.
*/

import emews_objective;

(string model_result) candle_model_train(string params, string expid, string runid,
                                         string model_name)
{
  model_result = emews_candle_model_train(params, expid, runid, model_name);
}
