"""PyInstaller's PySide6.QtGui hook without the Qt plugins calibsim never loads.

Left out here, before PyInstaller resolves their library dependencies (filtering them from the
spec would leave those in):

- the GTK 3 platform theme, which drags about 20 MB of the build machine's GTK stack in:
  calibsim draws with Qt's own Fusion style (qt/widgets/palettes.py);
- the platforms and input plugins for embedded devices without a desktop (EGLFS, LinuxFB, VNC,
  Vulkan display, evdev/tuio input): the bundle runs on X11 or Wayland, or offscreen for its
  self-test;
- image formats calibsim neither reads nor offers when a plot is saved as a picture (TIFF, WebP,
  ICNS, TGA, WBMP); PNG is built into QtGui, and SVG, ICO, JPEG and GIF stay.
"""

from pathlib import PurePath

from PyInstaller.utils.hooks.qt import add_qt6_dependencies

UNUSED_PLUGINS = {
    "platformthemes": ("libqgtk3",),
    "platforms": ("libqeglfs", "libqlinuxfb", "libqminimalegl", "libqvkkhrdisplay", "libqvnc"),
    "egldeviceintegrations": ("",),
    "generic": ("",),
    "imageformats": ("libqtiff", "libqwebp", "libqicns", "libqtga", "libqwbmp"),
}


def _unused(entry) -> bool:
    path = PurePath(entry[0])
    return path.parent.name in UNUSED_PLUGINS and path.name.startswith(UNUSED_PLUGINS[path.parent.name])


hiddenimports, binaries, datas = add_qt6_dependencies(__file__)
binaries = [entry for entry in binaries if not _unused(entry)]
