# Sourced by the README's commands: create or reuse the virtualenv and install emews into it.
# EMEWS_VENV overrides the location (default: .venv in the repository).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${EMEWS_VENV:-$ROOT/.venv}
EXTRAS=${EMEWS_EXTRAS-all,keras,test,bench,postgres,eqsql}   # set empty for the default install alone
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV" || return 1
fi
if [ ! -x "$VENV/bin/uv" ]; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check uv || return 1
fi
stamp="$VENV/.emews-installed"
overrides="$ROOT/scripts/uv-overrides.txt"
want="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" "$overrides" | sha256sum | cut -c1-16) $EXTRAS $ROOT"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "emews: installing into $VENV (extras: $EXTRAS)" >&2
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --override "$overrides" \
        -e "$ROOT${EXTRAS:+[$EXTRAS]}" || return 1
    echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
