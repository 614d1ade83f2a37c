#!/usr/bin/env bash
# Install the built bundle for the current user (Linux):
#   packaging/install.sh [BUNDLE]        BUNDLE defaults to dist/calibsim (built by packaging/build.sh)
# Copies BUNDLE to ~/.local/share/calibsim, links ~/.local/bin/calibsim to it, and adds the menu
# entry and the icon; see packaging/install-paths.sh for PREFIX / XDG_DATA_HOME overrides.
# Installing again replaces the previous installation. packaging/uninstall.sh removes it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bundle="${1:-$here/../dist/calibsim}"
source "$here/install-paths.sh"

if [ ! -x "$bundle/calibsim" ]; then
    echo "install.sh: $bundle/calibsim not found; build the bundle first (packaging/build.sh)" >&2
    exit 1
fi
icons="$bundle/_internal/resources/icons"
if [ -e "$LAUNCHER" ] && [ ! -L "$LAUNCHER" ]; then
    echo "install.sh: $LAUNCHER exists and is not calibsim's launcher link; remove it first" >&2
    exit 1
fi

mkdir -p "$DATA_DIR" "$BIN_DIR" "$(dirname "$DESKTOP_FILE")" "$(dirname "$ICON_PNG")" "$(dirname "$ICON_SVG")"
rm -rf "$APP_DIR.new"
cp -a "$bundle" "$APP_DIR.new"
rm -rf "$APP_DIR"
mv "$APP_DIR.new" "$APP_DIR"
ln -sfn "$APP_DIR/calibsim" "$LAUNCHER"
install -m 644 "$icons/calibsim.png" "$ICON_PNG"
install -m 644 "$icons/calibsim.svg" "$ICON_SVG"
# Desktop Entry Specification: TryExec is a plain string (\ doubled); Exec quotes the path and
# escapes \ " ` $ in it, before the string escaping (so a \ becomes four).
try_exec=$(printf '%s' "$APP_DIR/calibsim" | sed -e 's/\\/\\\\/g')
exec_arg=$(printf '%s' "$APP_DIR/calibsim" | sed -e 's/\\/\\\\\\\\/g' -e 's/["`$]/\\\\&/g')
entry=$(<"$here/calibsim.desktop")
entry=${entry//@EXEC@/"\"$exec_arg\""}
printf '%s\n' "${entry//@PATH@/"$try_exec"}" > "$DESKTOP_FILE"
chmod 644 "$DESKTOP_FILE"

echo "installed calibsim in $APP_DIR"
echo "  launcher   $LAUNCHER"
echo "  menu entry $DESKTOP_FILE"
case ":$PATH:" in
    *":$BIN_DIR:"*) ;;
    *) echo "note: $BIN_DIR is not on your PATH; the menu entry works regardless" ;;
esac
