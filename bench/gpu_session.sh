#!/usr/bin/env bash
# One GPU session's checks, for the GPU machine of ../shared/docs/GPU.md (no network there):
#   1. the tests marked `fast` with XLA's GPU defaults;
#   2. `bench/gpu.py`: the throughput table against MJX, then Monte Carlo.
# Run from the repository root with the device tool, carrying WHEELS (MuJoCo/MJX wheels for
# Python 3.12, fetched beforehand with `pip download`) and ROBOTS (a copy of example-robot-data's
# `robots` folder):
#   bash bench/gpu_session.sh            # results under $OUT
# Environment: WHEELS (default .whl), ROBOTS (default .robots), BUDGET (seconds, default 540),
# TEST_CUT (seconds for the tests, default 240), GPU_ARGS (extra arguments for bench/gpu.py),
# SODYN_COMMIT (the commit measured; the machine's copy has no git history).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
WHEELS=${WHEELS:-.whl}; ROBOTS=${ROBOTS:-.robots}; BUDGET=${BUDGET:-540}; TEST_CUT=${TEST_CUT:-240}
export XLA_PYTHON_CLIENT_PREALLOCATE=false SODYN_ROBOTS_DIR=$PWD/$ROBOTS
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python -V; nproc; } > "$OUT/machine.txt" 2>&1
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  pip install -q --no-index --no-deps --target /tmp/site "$WHEELS"/*.whl > "$OUT/install.txt" 2>&1
  export PYTHONPATH=/tmp/site
fi
pip install -q --no-deps --no-build-isolation -e . >> "$OUT/install.txt" 2>&1
python -c "import jax, sodyn; print('jax', jax.__version__, jax.devices())" >> "$OUT/machine.txt" 2>&1

SODYN_TEST_XLA_DEFAULTS=1 timeout "$TEST_CUT" python -m pytest -m fast -n "$(( $(nproc) * 3 / 4 ))" \
  -p no:cacheprovider -p no:benchmark -rfEs --durations=15 > "$OUT/fast.txt" 2>&1
echo "pytest rc $? after $(elapsed) s" | tee -a "$OUT/fast.txt"
tail -3 "$OUT/fast.txt"

left=$(( BUDGET - $(elapsed) ))
timeout "$left" python bench/gpu.py --robots "$ROBOTS" --deadline "$(( left - 90 ))" --out "$OUT/gpu.md" \
  ${GPU_ARGS:-} > "$OUT/gpu.log" 2>&1
echo "gpu.py rc $? after $(elapsed) s" | tee -a "$OUT/gpu.log"
tail -40 "$OUT/gpu.md"
