/*
   model_container.swift: candle_model_train() for CANDLE_MODEL_IMPL=container. emews runs
   the model's image (CANDLE_IMAGE, or MODEL_NAME=/path/model.sif with
   CANDLE_MODEL_TYPE=SINGULARITY) with its runtime (CANDLE_CONTAINER_RUNTIME: apptainer,
   singularity, charliecloud, podman, podman-hpc or shifter), its action script (MODEL_ACTION)
   and the point in params.json; the result is the last IMPROVE_RESULT line of model.log.
   swift-t -i model_container imports it (workflow.sh passes -i model_$CANDLE_MODEL_IMPL);
   emews_objective.swift does the work.
*/

import emews_objective;

(string model_result) candle_model_train(string params, string expid, string runid,
                                         string model_name)
{
  model_result = emews_candle_model_train(params, expid, runid, model_name);
}
