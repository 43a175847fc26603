# Sourced by scripts/serve and scripts/test: make .venv and install agentws into it.
# Usage: ensure_venv EXTRAS   (EXTRAS is "" or "[dev]")
# Reinstalls only when pyproject.toml changed since the last install.
ensure_venv() {
  local extras="$1" stamp=".venv/.installed${1:+-dev}"
  local python="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
      echo "agentws needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
      exit 1
    }
    echo "Creating .venv ..." >&2
    "$python" -m venv .venv
  fi
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "Installing agentws${extras} into .venv ..." >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
    touch "$stamp"
  fi
}
