/*
   model_app.swift: candle_model_train() for CANDLE_MODEL_IMPL=app. emews runs each point in
   its own process through its Model Shell, in the run's directory: params.json there, the
   site's EMEWS_LANGS_APP sourced, APP_PYTHONPATH first on PYTHONPATH, the command EMEWS_APP
   (by default the CANDLE model runner), output in model.log, a hard timeout (SH_TIMEOUT); the
   result is result.txt or the last IMPROVE_RESULT line.
   swift-t -i model_app imports it (workflow.sh passes -i model_$CANDLE_MODEL_IMPL);
   emews_objective.swift does the work.
*/

import emews_objective;

(string model_result) candle_model_train(string params, string expid, string runid,
                                         string model_name)
{
  model_result = emews_candle_model_train(params, expid, runid, model_name);
}
