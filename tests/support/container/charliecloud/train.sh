#!/bin/bash
# An IMPROVE-style action script, installed in the test image as /usr/local/bin/train.sh (the
# image has bash, sed and awk, no Python), as CANDLE/IMPROVE images ship theirs:
#   train.sh DEVICES DATA_DIR --params_file FILE --experiment_id EXP --run_id RUN
# It reads x and an optional "behaviour" from the params file (data, never code), copies the
# file to received.json, and reports IMPROVE_RESULT (x - 0.5)^2. Behaviours: "sleep" (a child
# that sleeps, both pids in pids.txt), "fail" (exit 3 after a line on stderr), "epochs" (a
# report line per epoch, then the result), "train" (an emews learning-curve report line,
# EMEWS_REPORT {json}, every 0.1 s for up to 600 epochs, its pid in pids.txt), "resume" (4
# epochs, each saved as a checkpoint in $EMEWS_CHECKPOINT_DIR/epoch, going on after the saved
# one; a run that starts from none dies after epoch 2, exit 9), "freeze" (tests/test_thaw.py's
# curve, x^2 + (1 + n)/step for 27 steps, as tests/support/freeze_app.py: each step appended to
# trained.txt, saved as $EMEWS_CHECKPOINT_DIR/step-N and reported, EMEWS_REPORT {json}; a thawed
# run goes on from the checkpoint of step $EMEWS_TRAIN_FROM; its result is the value at step
# 27). A "size" in the params is reported too, as a second labelled result (IMPROVE_RESULT size
# N) before val_loss.
set -eu
devices=$1 data_dir=$2
shift 2
while (( $# )); do
  case $1 in
    --params_file) params=$2 ;;
    --experiment_id) experiment=$2 ;;
    --run_id) run=$2 ;;
    *) echo "train.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
field() { sed -n "s/.*\"$1\": *\"\{0,1\}\([-+.0-9eEa-z]*\).*/\1/p" "$params" | head -n 1; }
run_dir=$(dirname -- "$params")
cp -- "$params" "$run_dir/received.json"
echo "inside image $(cat /etc/emews-test-image) (Debian $(cat /etc/debian_version)) as pid $$:" \
     "devices '$devices', data '$data_dir', CANDLE_DATA_DIR '$CANDLE_DATA_DIR', cwd $(/bin/pwd)," \
     "experiment $experiment, run $run"
x=$(field x)
case $(field behaviour) in
  sleep)
    sleep 300 &
    echo "$$ $!" > "$run_dir/pids.txt"
    wait ;;
  fail)
    echo "train.sh: the model failed on purpose" >&2
    exit 3 ;;
  epochs)
    for epoch in 1 2 3; do
      awk -v x="$x" -v e="$epoch" 'BEGIN { printf "epoch %d val_loss %.6f\n", e, (x - 0.5)^2 + 1/e }'
    done ;;
  resume)
    saved=$(cat "$EMEWS_CHECKPOINT_DIR/epoch" 2>/dev/null || echo 0)
    echo "checkpoint directory $EMEWS_CHECKPOINT_DIR: going on after epoch $saved"
    for epoch in $(seq $(( saved + 1 )) 4); do
      echo "epoch $epoch"
      echo "$epoch" > "$EMEWS_CHECKPOINT_DIR/epoch"
      if (( saved == 0 && epoch == 2 )); then echo "train.sh: died after epoch 2" >&2; exit 9; fi
    done ;;
  freeze)
    n=$(field n) from=${EMEWS_TRAIN_FROM:-0} first=1
    if [[ -e $EMEWS_CHECKPOINT_DIR/step-$from ]]; then first=$(( from + 1 )); fi
    value() { awk -v x="$x" -v n="$n" -v s="$1" 'BEGIN { printf "%.17g", x * x + (1 + n) / s }'; }
    for step in $(seq "$first" 27); do
      echo "$step" >> "$run_dir/trained.txt"
      value "$step" > "$EMEWS_CHECKPOINT_DIR/step-$step"
      echo "EMEWS_REPORT {\"step\": $step, \"value\": $(value "$step")}"
    done
    echo "IMPROVE_RESULT val_loss $(value 27)"
    exit 0 ;;
  train)
    echo "$$" > "$run_dir/pids.txt"
    for epoch in $(seq 1 600); do
      awk -v x="$x" -v e="$epoch" 'BEGIN { printf "EMEWS_REPORT {\"step\": %d, \"value\": %.17g}\n", e, (x - 0.5)^2 + 1/e }'
      sleep 0.1
    done ;;
esac
size=$(field size)
if [[ -n $size ]]; then echo "IMPROVE_RESULT size $size"; fi
awk -v x="$x" 'BEGIN { printf "IMPROVE_RESULT val_loss %.17g\n", (x - 0.5)^2 }'
