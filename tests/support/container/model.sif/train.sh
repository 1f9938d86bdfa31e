#!/bin/bash
# An IMPROVE-style train.sh: $1 CUDA_VISIBLE_DEVICES, $2 the CANDLE data directory, then the
# model's own arguments.
export CUDA_VISIBLE_DEVICES=$1 CANDLE_DATA_DIR=$2
shift 2
exec python3 "$(dirname "$0")/improve_model.py" "$@"
