"""PyInstaller's PySide6.QtGui hook without the GTK 3 platform-theme plugin.

That plugin drags about 20 MB of the build machine's GTK stack into the bundle, for nothing:
calibsim draws with Qt's own Fusion style (qt/palettes.py). The plugin must be left out here,
before PyInstaller resolves its library dependencies; filtering it from the spec would leave them in.
"""

from pathlib import PurePath

from PyInstaller.utils.hooks.qt import add_qt6_dependencies

hiddenimports, binaries, datas = add_qt6_dependencies(__file__)
binaries = [entry for entry in binaries if "qgtk3" not in PurePath(entry[0]).name]
