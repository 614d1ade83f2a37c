# Where packaging/install.sh puts calibsim and packaging/uninstall.sh removes it (sourced by both).
# Per user, following the XDG base directories: PREFIX (default ~/.local) holds bin/ and share/;
# without PREFIX, XDG_DATA_HOME replaces ~/.local/share when it is set.
if [ -n "${PREFIX:-}" ]; then
    DATA_DIR="$PREFIX/share"
    BIN_DIR="$PREFIX/bin"
else
    DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}"
    BIN_DIR="$HOME/.local/bin"
fi
APP_DIR="$DATA_DIR/calibsim"                                   # the bundle
LAUNCHER="$BIN_DIR/calibsim"                                   # symlink to $APP_DIR/calibsim
DESKTOP_FILE="$DATA_DIR/applications/calibsim.desktop"
ICON_PNG="$DATA_DIR/icons/hicolor/256x256/apps/calibsim.png"
ICON_SVG="$DATA_DIR/icons/hicolor/scalable/apps/calibsim.svg"
