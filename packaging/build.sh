#!/usr/bin/env bash
# Build calibsim's desktop bundle: dist/calibsim/ (and dist/calibsim.app on macOS).
#   packaging/build.sh            (or: make bundle)
# Uses the project's virtual environment (.venv, made by `make install`) or $PYTHON, installs
# the "bundle" extra (PyInstaller, pinned in packaging/constraints-cpu.txt), then runs the spec.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
start=$(date +%s)
"$PYTHON" -m pip install --quiet -c packaging/constraints-cpu.txt -e ".[bundle]"
# The built-in model as the bundle's ONNX engine runs it (no torch inside the bundle).
rm -rf build/onnx-model
"$PYTHON" scripts/export_onnx.py build/onnx-model
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build \
    packaging/calibsim.spec
echo "built dist/calibsim: $(du -sh dist/calibsim | cut -f1) in $(( $(date +%s) - start )) s"
"$PYTHON" packaging/bundle_sizes.py dist/calibsim --top 5     # MiB per component (packaging/README.md, "Size")
