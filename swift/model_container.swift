/*
   model_container.swift: candle_model_train() for CANDLE_MODEL_IMPL=container. The model
   runs in a container image, as emews.objective's container implementation runs it (its
   documentation lists the variables it reads).
   swift-t -i model_container imports it (workflow.sh passes -i model_$CANDLE_MODEL_IMPL);
   emews_objective.swift does the work.
*/

import emews_objective;

(string model_result) candle_model_train(string params, string expid, string runid,
                                         string model_name)
{
  model_result = emews_candle_model_train(params, expid, runid, model_name);
}
