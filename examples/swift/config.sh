# Model settings for swift/workflow.sh: scikit-learn's digits MLP (emews.models.digits),
# called in each worker's Python interpreter. Sourced; the environment wins.
#
#   swift/workflow.sh local examples/swift/settings.json examples/swift/config.sh

export MODEL_NAME=${MODEL_NAME:-digits}
export CANDLE_MODEL_IMPL=${CANDLE_MODEL_IMPL:-py}            # model_py.swift
export EMEWS_OBJECTIVE=${EMEWS_OBJECTIVE:-emews.models.digits:train}
export MODEL_RETURN=${MODEL_RETURN:-val_loss}                # the key of train()'s dict to minimize
export APP_PYTHONPATH=${APP_PYTHONPATH:-}                    # where your model's modules live
export CANDLE_DATA_DIR=${CANDLE_DATA_DIR:-$PWD/experiments}  # experiments go under it
