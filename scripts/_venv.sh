# Sourced by scripts/serve and scripts/test: make .venv and install agentws into it.
# Usage: ensure_venv EXTRAS   (EXTRAS is "" or "[dev]")
# The dependencies come from the lock (requirements/runtime.lock, or
# requirements/dev.lock with the dev extras), each release checked against
# its hash; agentws itself is installed editable without touching them.
# Reinstalls only when the lock or pyproject.toml changed since the last
# install. scripts/lock rewrites the locks.
ensure_venv() {
  local extras="$1" stamp=".venv/.installed${1:+-dev}"
  local lock="requirements/runtime.lock"
  [ -n "$extras" ] && lock="requirements/dev.lock"
  local python="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
      echo "agentws needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
      exit 1
    }
    echo "Creating .venv ..." >&2
    "$python" -m venv .venv
  fi
  if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "Installing agentws${extras} into .venv from $lock ..." >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r "$lock"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
    touch "$stamp"
  fi
}
