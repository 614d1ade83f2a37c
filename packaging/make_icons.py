"""Render resources/icons/calibsim.svg into the per-OS icon files (run after editing the SVG).

    .venv/bin/python packaging/make_icons.py

Writes calibsim.png (256 px: Linux, the window icon), calibsim.ico (Windows, 16-256 px) and
calibsim.icns (macOS, 16-1024 px). Qt renders the SVG; Pillow (only needed here, not by the
app or the build: `pip install pillow`) writes the multi-size .ico and .icns.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"


def render_png(svg: Path, size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    QSvgRenderer(str(svg)).render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PIL import Image

    svg = ICONS / "calibsim.svg"
    (ICONS / "calibsim.png").write_bytes(render_png(svg, 256))
    big = Image.open(io.BytesIO(render_png(svg, 1024)))
    big.save(ICONS / "calibsim.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
    big.save(ICONS / "calibsim.icns")
    for name in ("calibsim.png", "calibsim.ico", "calibsim.icns"):
        print(f"wrote {ICONS / name} ({(ICONS / name).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
