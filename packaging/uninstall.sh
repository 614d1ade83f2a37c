#!/usr/bin/env bash
# Remove what packaging/install.sh installed (same PREFIX / XDG_DATA_HOME as for the install):
#   packaging/uninstall.sh
# A ~/.local/bin/calibsim that is not the link to the installed bundle is left alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/install-paths.sh"

if [ -L "$LAUNCHER" ] && [ "$(readlink "$LAUNCHER")" = "$APP_DIR/calibsim" ]; then
    rm -f "$LAUNCHER"
fi
rm -f "$DESKTOP_FILE" "$ICON_PNG" "$ICON_SVG"
rm -rf "$APP_DIR" "$APP_DIR.new"
echo "removed calibsim from $APP_DIR"
